"""Rules without code: CEL expressions over a span or a run, from a rules file. ``load``
reads and compiles a file, ``engine`` is CEL, ``check`` makes each rule a check."""
