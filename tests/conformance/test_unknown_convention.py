"""The honesty floor (issue 40): a run whose agent work is written in a convention no reader
knows is never called clean.

Every conformance family's runs are rebuilt with their child spans moved into a vocabulary
no reader here knows, the root left as it is: every attribute key put under a namespace of
its own (``acme.gen_ai.tool.name``), or also written in camel case
(``acme.genAiToolName``), and every span name with it. A run whose script enacted a failure
must then come out failed or undecided, never clean; and since every scenario's run does
its work in child spans (model calls, tool calls), no run may come out clean at all. The
same holds read from protobuf with the live service's projection, which leaves most of
those keys out of the record: what a span is was told before they were dropped.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from faultgate_stream.checks.registry import select
from faultgate_stream.pipeline import check_spans
from faultgate_stream.read import otlp_json, otlp_proto
from faultgate_stream.read.files import read_files
from faultgate_stream.read.projection import Projection
from faultgate_stream.verdict.ruleset import Ruleset
from tests.conformance.score import BUILT_IN, expected, families, input_files, verdict_of

FAMILIES = families()


def namespaced(key: str) -> str:
    return f"acme.{key}"


def camel(key: str) -> str:
    words = [w for w in re.split(r"[._\- ]+", key) if w] or ["span"]
    return "acme." + words[0].lower() + "".join(w[:1].upper() + w[1:] for w in words[1:])


MOVES: dict[str, Callable[[str], str]] = {"namespaced": namespaced, "camel": camel}


def moved(doc: dict[str, Any], rename: Callable[[str], str]) -> dict[str, Any]:
    """``doc`` (OTLP/JSON) with every child span's attribute keys, name and events renamed."""
    out = json.loads(json.dumps(doc))
    for rs in out.get("resourceSpans", ()):
        for ss in rs.get("scopeSpans", ()):
            for span in ss.get("spans", ()):
                if not span.get("parentSpanId"):
                    continue  # the root, as it is
                span["name"] = rename(span.get("name", ""))
                for kv in span.get("attributes", ()):
                    kv["key"] = rename(kv["key"])
                # a convention's span events are its vocabulary too (Strands writes each
                # message as a gen_ai.* event)
                for event in span.get("events", ()):
                    event["name"] = rename(event.get("name", ""))
                    for kv in event.get("attributes", ()):
                        kv["key"] = rename(kv["key"])
    return out


def _verdicts(family: Path, rename: Callable[[str], str], tmp: Path):
    doc = moved(json.loads((family / "traces.json").read_text()), rename)
    path = tmp / f"{family.name}.json"
    path.write_text(json.dumps(doc))
    logs = [str(p) for p in input_files(family) if p.name == "logs.json"]
    found = read_files([str(path), *logs])
    return doc, check_spans([f.spans for f in found], select(BUILT_IN.split(",")), [f.contents for f in found])


@pytest.mark.parametrize("how", MOVES)
@pytest.mark.parametrize("family", FAMILIES, ids=lambda p: p.name)
def test_a_run_moved_into_an_unknown_convention_is_never_clean(family, how, tmp_path):
    _, verdicts = _verdicts(family, MOVES[how], tmp_path)
    by_trace: dict[str, list[str]] = {}
    for v in verdicts:
        by_trace.setdefault(v.key.trace_id, []).append(verdict_of(v))
    runs = expected(family)["runs"]
    clean_failures = [(r["scenario"], r["enacts"]) for r in runs if r["enacts"]
                      and "clean" in by_trace.get(r["trace_id"], ["clean"])]
    assert not clean_failures, clean_failures
    clean = [r["scenario"] for r in runs if "clean" in by_trace.get(r["trace_id"], ["clean"])]
    assert not clean, clean


@pytest.mark.parametrize("family", FAMILIES, ids=lambda p: p.name)
def test_the_undecided_reasons_name_the_spans_not_read(family, tmp_path):
    _, verdicts = _verdicts(family, namespaced, tmp_path)
    reasons = Counter(r.reason for v in verdicts for r in v.results if r.undecided)
    assert any("not read as tool calls" in r or "not read as model calls" in r for r in reasons), reasons
    assert all(v.unread for v in verdicts if v.verdict == "undecided" and not v.fired)


def test_the_live_reader_with_its_projection_tells_the_same_unread_work(tmp_path):
    projection = Projection(Ruleset(tuple(select(None))).attributes)
    checked = 0
    for family in FAMILIES:
        doc = moved(json.loads((family / "traces.json").read_text()), camel)
        request, _, problem = otlp_json.to_request(doc)
        assert not problem, problem
        data = request.SerializeToString()
        full, projected = otlp_proto.read(data).spans, otlp_proto.read(data, projection).spans
        assert [s.missing for s in projected] == [s.missing for s in full]
        assert any(s.missing for s in full)
        assert check_spans([projected], select(None)) == check_spans([full], select(None))
        checked += 1
    assert checked == len(FAMILIES)
