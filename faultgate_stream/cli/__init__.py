"""cli: the ``faultgate-stream`` command line, a drop-in for faultgate's (exit 0 clean,
1 a check fired, 2 bad input)."""
