"""gate: regression or noise. Tolerance bands compatible with faultgate 0.4.1's
``band.json`` (``band``), the statistics that compare a candidate with one (``stats``,
``decide``), the offline summaries (``summary``, ``audit``) and, live, a rolling window
per agent and version read at scrape time (``rolling``, ``collector``, ``sink``)."""
