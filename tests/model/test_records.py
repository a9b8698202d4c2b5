"""Records stay what checks rely on: immutable, equal by value, built only from their fields."""
from __future__ import annotations

import pytest

from faultgate_stream.model.records import SpanRecord, Step, ToolCall, ToolExecution


def test_records_are_immutable():
    rec = SpanRecord("t", "s", None, "n", 1, attrs={"a": 1})
    for obj, name in ((rec, "name"), (Step(1, "t", "a", "r", "s"), "result"), (ToolCall("c", "n", "a"), "name"),
                      (ToolExecution("n", "a", "r"), "result")):
        with pytest.raises(AttributeError):
            setattr(obj, name, "x")


def test_records_compare_by_value():
    tool = ToolExecution("search", "{}", "[]", "c1")
    a = SpanRecord("t", "s", None, "n", 1, attrs={"a": 1}, tool=tool)
    b = SpanRecord("t", "s", None, "n", 1, attrs={"a": 1}, tool=ToolExecution("search", "{}", "[]", "c1"))
    assert a == b and a != a._replace(start_ns=2)
    assert hash(Step(1, "t", "a", "r", "s")) == hash(Step(1, "t", "a", "r", "s"))


def test_a_record_built_without_attributes_cannot_change_the_shared_default():
    rec = SpanRecord("t", "s", None, "n", 1)
    with pytest.raises(TypeError):
        rec.attrs["x"] = 1  # type: ignore[index]
    assert rec.attrs == {}
