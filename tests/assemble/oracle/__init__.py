"""The assembler as it was in Python (faultgate_stream/assemble/ before its bookkeeping moved
to the compiled trace table, native/py/src/assemble/), kept unchanged but for these imports as
the oracle of tests/assemble/test_table.py: both must give the same runs, late spans,
counters and order for any input. Not used by the package."""
