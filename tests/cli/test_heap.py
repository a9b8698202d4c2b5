"""The service's start-up heap leaves the collector's generations."""
from __future__ import annotations

import gc

from faultgate_stream.cli import heap


def test_settle_freezes_what_exists_and_the_collector_then_skips_it():
    marker = [object() for _ in range(100)]  # a tracked container built before settling
    try:
        frozen = heap.settle()
        assert frozen == gc.get_freeze_count() > 0
        assert not any(o is marker for o in gc.get_objects())  # frozen objects are not walked
    finally:
        gc.unfreeze()  # global state: the next test's collector sees everything again
    assert any(o is marker for o in gc.get_objects())
