"""A record's attributes as the compiled reader leaves them: held by the core, a read-only
mapping for Python (``SpanAttributes``, native/py/src/attributes.rs) whose values are made
when they are read, as the reader made them when it built a dict."""
from __future__ import annotations

import copy
import pickle
from collections.abc import Mapping
from types import MappingProxyType

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from faultgate_stream.checks import api
from faultgate_stream.checks.plugins.adapt import Views
from faultgate_stream.checks.signals import span_error
from faultgate_stream.model.records import NO_ATTRS, SpanAttributes, SpanRecord
from faultgate_stream.read import otlp_proto
from tests.read.parity import comparable, value


def _kv(key: str, v: AnyValue) -> KeyValue:
    return KeyValue(key=key, value=v)


# every kind of value an attribute carries, in an order that is not the keys' own
EVERY_KIND = [
    _kv("z.text", AnyValue(string_value="lookup")),
    _kv("a.int", AnyValue(int_value=-7)),
    _kv("m.big", AnyValue(int_value=2**63 - 1)),
    _kv("b.float", AnyValue(double_value=1.5)),
    _kv("y.bool", AnyValue(bool_value=True)),
    _kv("c.bytes", AnyValue(bytes_value=b"\x00\xff")),
    _kv("x.list", AnyValue(array_value=ArrayValue(values=[AnyValue(int_value=1), AnyValue(string_value="two")]))),
    _kv("d.map", AnyValue(kvlist_value=KeyValueList(values=[_kv("k", AnyValue(double_value=2.0))]))),
    _kv("w.none", AnyValue()),
    _kv("é.unicode", AnyValue(string_value="naïve ✓")),
]


def read_one(attributes: list[KeyValue], status: int = 0) -> SpanRecord:
    span = Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="work", start_time_unix_nano=1,
                end_time_unix_nano=2, attributes=attributes, status=Status(code=status))
    data = ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=[span])])]
                                     ).SerializeToString()
    [record] = otlp_proto.read(data).spans
    return record


def test_the_reader_leaves_the_attributes_with_the_core_and_none_kept_share_no_attrs():
    assert type(read_one(EVERY_KIND).attrs) is SpanAttributes
    assert read_one([]).attrs is NO_ATTRS


def test_each_value_reads_as_the_python_object_of_its_kind():
    attrs = read_one(EVERY_KIND).attrs
    expected = {kv.key: value(kv.value) for kv in EVERY_KIND}
    # type by type: 1 is not 1.0 nor True, a list is not a tuple
    assert comparable(dict(attrs)) == comparable(expected)
    assert [type(attrs[k]).__name__ for k in ("a.int", "b.float", "y.bool", "c.bytes", "x.list", "d.map")] == \
        ["int", "float", "bool", "bytes", "list", "dict"]
    assert attrs["w.none"] is None and attrs["m.big"] == 2**63 - 1


def test_the_attributes_are_a_read_only_mapping_in_the_spans_order():
    attrs = read_one(EVERY_KIND).attrs
    keys = [kv.key for kv in EVERY_KIND]
    assert isinstance(attrs, Mapping)
    assert len(attrs) == len(EVERY_KIND) and bool(attrs)
    assert list(attrs) == keys == list(attrs.keys())
    assert [k for k, _ in attrs.items()] == keys
    assert list(attrs.values()) == [attrs[k] for k in keys]
    assert "z.text" in attrs and "nope" not in attrs and 1 not in attrs
    assert attrs.get("z.text") == "lookup" and attrs.get("nope") is None and attrs.get("nope", 5) == 5
    assert attrs.keys() & {"a.int", "nope"} == {"a.int"}  # a dict's views: set operations hold
    with pytest.raises(KeyError, match="nope"):
        attrs["nope"]
    with pytest.raises(TypeError):
        attrs["z.text"] = "changed"  # type: ignore[index]
    with pytest.raises(TypeError):
        del attrs["z.text"]  # type: ignore[attr-defined]
    assert attrs["z.text"] == "lookup"


def test_the_attributes_equal_any_mapping_with_the_same_items_in_any_order():
    attrs = read_one(EVERY_KIND).attrs
    same = {kv.key: value(kv.value) for kv in reversed(EVERY_KIND)}
    assert attrs == same and same == attrs and not attrs != same
    assert attrs == MappingProxyType(same) and MappingProxyType(same) == attrs
    assert attrs == read_one(EVERY_KIND).attrs  # another record's, made apart
    assert attrs != {**same, "a.int": -8} and attrs != {**same, "extra": 1}
    assert attrs != list(same.items()) and attrs != NO_ATTRS
    # as dicts compare: 1 == 1.0 == True
    assert read_one([_kv("n", AnyValue(int_value=1))]).attrs == {"n": 1.0} == {"n": True}


def test_the_attributes_are_unhashable_as_a_dict_is():
    with pytest.raises(TypeError, match="unhashable"):
        hash(read_one(EVERY_KIND).attrs)


def test_the_attributes_pickle_and_copy_as_the_dict_of_their_items():
    attrs = read_one(EVERY_KIND).attrs
    for other in (pickle.loads(pickle.dumps(attrs)), copy.copy(attrs), copy.deepcopy(attrs)):
        assert type(other) is dict and comparable(other) == comparable(dict(attrs))
    record = read_one(EVERY_KIND)
    assert pickle.loads(pickle.dumps(record)) == record


def test_each_read_makes_a_new_value_so_a_reader_that_changes_one_changes_nothing_held():
    attrs = read_one(EVERY_KIND).attrs
    attrs["x.list"].append("mine")
    attrs["d.map"]["k"] = 0
    assert attrs["x.list"] == [1, "two"] and attrs["d.map"] == {"k": 2.0}


def test_the_repr_names_the_mapping_and_shows_its_items():
    attrs = read_one([_kv("a", AnyValue(string_value="x")), _kv("b", AnyValue(int_value=2))]).attrs
    assert repr(attrs) == "SpanAttributes({'a': 'x', 'b': 2})"


def test_a_key_among_hundreds_is_found_and_the_order_kept():
    many = [_kv(f"k{i:03d}", AnyValue(int_value=i)) for i in reversed(range(300))]
    attrs = read_one(many).attrs
    assert list(attrs) == [kv.key for kv in many]
    assert all(attrs[f"k{i:03d}"] == i for i in range(300)) and "k300" not in attrs


def test_its_size_counts_the_bytes_the_core_holds_for_it():
    short = read_one([_kv("k", AnyValue(string_value="x"))]).attrs
    long = read_one([_kv("k", AnyValue(string_value="x" * 10_000))]).attrs
    assert long.__sizeof__() - short.__sizeof__() >= 9_999
    assert short.__sizeof__() > type(short).__basicsize__


def test_the_built_in_checks_read_the_cores_attributes_as_they_read_a_dict():
    record = read_one([_kv("error.type", AnyValue(string_value="TimeoutError"))], status=0)
    assert type(record.attrs) is SpanAttributes
    assert span_error(record) == span_error(record._replace(attrs=dict(record.attrs))) != ""
    assert record.error_type == "TimeoutError"


def test_a_plugins_view_of_a_span_holds_only_its_attributes_without_a_copy_when_it_may_see_all():
    allowed = sorted(api.STANDARD_ATTRIBUTES)[:2]
    only_allowed = read_one([_kv(k, AnyValue(string_value=k)) for k in allowed])
    view = Views().span(only_allowed)
    assert view.attributes is only_allowed.attrs
    more = read_one([_kv(allowed[0], AnyValue(int_value=1)), _kv("not.declared", AnyValue(int_value=2))])
    cut = Views().span(more).attributes
    assert type(cut) is SpanAttributes and dict(cut) == {allowed[0]: 1}
    assert Views(declared=("not.declared",)).span(more).attributes is more.attrs
    assert Views().span(read_one([_kv("not.declared", AnyValue(int_value=2))])).attributes is NO_ATTRS
    # a record built in Python holds a dict: its view is the same items, read-only
    by_hand = more._replace(attrs=dict(more.attrs))
    assert Views().span(by_hand).attributes == cut and isinstance(Views().span(by_hand).attributes, MappingProxyType)
