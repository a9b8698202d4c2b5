"""The span sink writes what it wrote before its per-run work was cut to cached pieces, byte
for byte (``span_export_oracle.py``): on the live bench's workload through the service, on
generated verdicts, and for wire framing at every varint length."""
from __future__ import annotations

import random
from functools import partial

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.live import Requests, build_template
from faultgate_stream import _native
from faultgate_stream import config as service_config
from faultgate_stream.export.spans import annotate
from faultgate_stream.model.clock import ManualClock
from faultgate_stream.model.reason import quoted, reason
from faultgate_stream.model.records import RunKey
from faultgate_stream.model.verdict import CheckResult, Completion, RunVerdict
from faultgate_stream.receive.grpc_server import TraceExport
from faultgate_stream.service import Service
from faultgate_stream.verdict.redact import get_redactor
from tests.export import span_export_oracle as oracle
from tests.export.verdicts import SECRET, verdicts

REDACT = get_redactor("builtin")
# shared by every example: a piece kept for one verdict is what a later one gets back
SHARED = annotate.VerdictBytes(REDACT)


def _outcome(make):
    try:
        return make()
    except Exception as e:  # noqa: BLE001 (both sides must refuse the same inputs alike)
        return type(e).__name__


def test_the_bench_workloads_export_is_byte_for_byte_the_oracles():
    env = {"FAULTGATE_STREAM__LOG__VERDICTS": "false", "FAULTGATE_STREAM__ASSEMBLE__ROOT_GRACE": "0.5s",
           "FAULTGATE_STREAM__RECEIVE__GRPC_ENDPOINT": "127.0.0.1:0",
           "FAULTGATE_STREAM__RECEIVE__HTTP_ENDPOINT": "127.0.0.1:0",
           "FAULTGATE_STREAM__METRICS__ENDPOINT": "127.0.0.1:0", "FAULTGATE_STREAM__EXPORT__ENDPOINT": "127.0.0.1:9"}
    clock = ManualClock(1_700_000_000 * 10**9)
    service = Service(service_config.load(None, env), clock=clock)
    sink, queue, cfg = service.span_sink, service.export.queue, service.config.export
    calls = []
    export_held, put = sink.export_held, queue.put

    def recording(held, v):
        items = []
        queue.put = lambda item: (items.append(item), put(item))
        try:
            export_held(held, v)
        finally:
            del queue.put
        calls.append((dict(held), v, [(i.payload, i.spans) for i in items]))

    sink.export_held = recording
    template, offsets, _ = build_template(32, random.Random(20261201))
    source = Requests(template, offsets, 0)
    handler = TraceExport(service.ingest, service.telemetry, service.reader)
    for _ in range(4):
        handler(source.next(), None)
        clock.advance(0.6)
        service.assembler._scan()  # noqa: SLF001 (the completion scan, as the ticker runs it)
    assert len(calls) == 4 * 32 and all(v is not None and v.results for _, v, _ in calls)
    for held, v, got in calls:
        assert got == oracle.export_held(held, v, service.export.redact, cfg.strip_content, cfg.max_batch_spans,
                                         cfg.max_batch_bytes)


def test_results_that_differ_only_in_how_their_span_ids_split_get_their_own_bytes():
    # the annex keeps one encoding per key: span ids ('',) and (), ('a,b',) and ('a', 'b') must
    # not share one (hypothesis found the first pair on a seed, evaluations written with
    # another result's span ids)
    cache = annotate.VerdictBytes(REDACT)
    key = RunKey(trace_id="0af7651916cd43dd8448eb211c80319c", root_span_id="b7ad6b7169203331")
    for ids in ((), ("",), ("a,b",), ("a", "b")):
        r = CheckResult(check="policy", fired=True, confidence=1.0, reason="r", evaluator="team-checks 1.0",
                        span_ids=ids)
        v = RunVerdict(key=key, scenario="s", agent="shop", agent_version="", completion=Completion.COMPLETE,
                       results=(r,), steps=1, spans=1, root_span_id=key.root_span_id)
        assert cache(v, 7) == oracle.root_annex(v, 7, REDACT), ids


def test_verdicts_whose_results_name_an_evaluator_are_written_by_kept_keys_that_stay_bounded_and_count_evictions():
    # a plug-in's or a rules file's result names its evaluator on every run: the annex's keys
    # for such a verdict are kept by its digests and evaluators, at most MAX_CACHED_DIGESTS,
    # and what a clear forgets is counted (faultgate_exporter_evaluation_key_cache_evictions)
    cache = annotate.VerdictBytes(REDACT)
    keys = cache.keys
    key = RunKey(trace_id="0af7651916cd43dd8448eb211c80319c", root_span_id="b7ad6b7169203331")
    kinds = annotate.MAX_CACHED_DIGESTS + 7

    def verdict(i: int) -> RunVerdict:
        plain = CheckResult(check="policy", fired=False, confidence=1.0, reason="ok")
        named = CheckResult(check="mine", fired=bool(i % 2), confidence=1.0, reason="r",
                            evaluator=f"team-checks 1.{i % kinds}")
        return RunVerdict(key=key, scenario="s", agent="shop", agent_version="", completion=Completion.COMPLETE,
                          results=(plain, named), steps=1, spans=1, root_span_id=key.root_span_id,
                          rule_digests=("d1", "d2"))

    for i in range(annotate.MAX_CACHED_DIGESTS):
        v = verdict(i)
        for _ in range(2):  # made, then kept
            assert cache(v, 7) == oracle.root_annex(v, 7, REDACT), i
        assert len(keys.kept) == i + 1
    assert keys.evicted == 0  # the table full, nothing forgotten yet
    for i in range(annotate.MAX_CACHED_DIGESTS, annotate.MAX_CACHED_DIGESTS + 20):
        v = verdict(i)
        for _ in range(2):
            assert cache(v, 7) == oracle.root_annex(v, 7, REDACT), i
        assert 0 < len(keys.kept) <= annotate.MAX_CACHED_DIGESTS
    # one clear, when the 257th kind came: every key held then was forgotten, and counted
    assert keys.evicted == annotate.MAX_CACHED_DIGESTS
    assert len(keys.kept) == 20


def test_the_evaluation_key_cache_evictions_reach_the_exporters_metrics():
    # the sink's VerdictBytes, the late roots' write_verdict and the log records share the
    # export state's keys, and the service exposes what they forgot
    from prometheus_client import CollectorRegistry, generate_latest

    from faultgate_stream.export.spans.config import SpansExportConfig
    from faultgate_stream.export.spans.sink import SpanSink
    from faultgate_stream.export.spans.state import ExportState
    from faultgate_stream.model.telemetry import Telemetry
    from faultgate_stream.service import _ExportGauges

    state = ExportState.build(SpansExportConfig(endpoint="127.0.0.1:9"), Telemetry(CollectorRegistry()), REDACT)
    sink = SpanSink(state)
    assert sink._verdict_bytes.keys is state.evaluation_keys  # noqa: SLF001
    state.evaluation_keys.evicted = 5
    registry = CollectorRegistry()
    registry.register(_ExportGauges(state, sink))
    assert "faultgate_exporter_evaluation_key_cache_evictions_total 5.0" in generate_latest(registry).decode()


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(verdicts(), st.sampled_from((0, 99, 1 << 63, 1 << 64)))
def test_a_roots_verdict_bytes_are_protobufs_encoding_of_its_attributes_and_events(v, end_ns):
    assert _outcome(lambda: SHARED(v, end_ns)) == _outcome(lambda: oracle.root_annex(v, end_ns, REDACT))


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from((b"", b"r" * 5, b"r" * 124, b"r" * 300)), st.sampled_from(("", "https://s/1.30")),
       st.sampled_from((b"", b"s" * 3, b"s" * 200)), st.sampled_from(("", "https://scope")),
       st.integers(0, 20_000).map(lambda n: b"x" * n))
def test_a_released_span_is_framed_as_before(resource, resource_schema, scope, scope_schema, span):
    want = oracle.resource_spans_entry(resource, resource_schema, scope, scope_schema, span)
    assert _native.span_entry(resource, resource_schema, scope, scope_schema, span) == want
    # the verdict's annex goes after the span's own bytes, inside the same span field
    for cut in {0, len(span) // 3, len(span)}:
        assert _native.span_entry(resource, resource_schema, scope, scope_schema, span[:cut], span[cut:]) == want


def test_two_quoted_reasons_equal_as_text_are_each_masked_whole_not_served_from_the_other():
    # equal as strings (the cut text), but only one hides a secret past the cut: the
    # mask sees each value whole, so what goes out differs, and a piece kept for one
    # must not be handed to the other (it once was: the evaluations were kept by text)
    secret = reason("args ", quoted("x" * 50 + " " + SECRET, 52))
    plain = reason("args ", quoted("x" * 50 + " s!", 52))
    assert secret == plain and REDACT(secret) != REDACT(plain)
    vb = annotate.VerdictBytes(REDACT)
    for first, second in ((plain, secret), (secret, plain)):
        for r in (first, second):
            v = RunVerdict(RunKey("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"), "s", "a", "",
                           Completion.GRACE, (CheckResult("repeated_call", True, 1.0, r),), 3, 4,
                           root_span_id="b7ad6b7169203331")
            assert vb(v, 5) == oracle.root_annex(v, 5, REDACT)


def test_the_kept_pieces_are_bounded_and_a_quoted_reason_is_never_kept():
    made = []

    def evaluation(r, digest):
        made.append(r.check)
        return annotate._evaluation(REDACT, r, digest)  # noqa: SLF001 (what the sink hands the table)

    def annex_of(size):
        return _native.VerdictAnnex(annotate._summary, partial(annotate._scenario, REDACT),  # noqa: SLF001
                                    partial(annotate._reason, REDACT), evaluation, annotate._head,  # noqa: SLF001
                                    size, annotate._RESULT_FIELDS)  # noqa: SLF001

    def encode(annex, results):
        return annex.encode(results, ("d",) * len(results), Completion.GRACE, "s", "run", b"", 5)

    results = tuple(CheckResult(f"c{i}", False, 1.0, "ok") for i in range(20))
    small = annex_of(3)
    encode(small, results)
    assert len(small) <= 3  # cleared when full, never grown
    annex = annex_of(64)
    encode(annex, results[:3])
    encode(annex, results[2:3])
    assert made[20:] == ["c0", "c1", "c2"]  # the second time, kept
    quoted_reason = CheckResult("q", True, 1.0, reason("args ", quoted("x" * 60, 10)))
    first, second = encode(annex, (quoted_reason,)), encode(annex, (quoted_reason,))
    assert made[23:] == ["q", "q"] and first == second


def test_the_pieces_a_full_table_forgets_are_counted_exactly():
    def encode(annex, results):
        return annex.encode(results, ("d",) * len(results), Completion.GRACE, "s", "run", b"", 5)

    annex = _native.VerdictAnnex(annotate._summary, partial(annotate._scenario, REDACT),  # noqa: SLF001
                                 partial(annotate._reason, REDACT),  # noqa: SLF001
                                 partial(annotate._evaluation, REDACT),  # noqa: SLF001
                                 annotate._head, 8, annotate._RESULT_FIELDS)  # noqa: SLF001
    results = tuple(CheckResult(f"c{i}", False, 1.0, "ok") for i in range(7))
    # the summary, the scenario and six evaluations: the table exactly full, nothing forgotten
    encode(annex, results[:6])
    encode(annex, results[:6])
    assert (len(annex), annex.evicted) == (8, 0)
    # a seventh evaluation: the full table is cleared, its eight pieces counted
    encode(annex, results[6:])
    assert (len(annex), annex.evicted) == (1, 8)
    # kept again (summary, scenario, c0) into the room the clear made: nothing more forgotten
    encode(annex, results[:1])
    assert (len(annex), annex.evicted) == (4, 8)


def test_the_annex_cache_evictions_reach_the_exporters_metrics():
    # the span sink's table, filled past MAX_CACHED_EVALUATIONS by one verdict of many checks,
    # and the service's collector reading what it forgot at scrape time
    from prometheus_client import CollectorRegistry, generate_latest

    from faultgate_stream.export.spans.config import SpansExportConfig
    from faultgate_stream.export.spans.sink import SpanSink
    from faultgate_stream.export.spans.state import ExportState
    from faultgate_stream.model.telemetry import Telemetry
    from faultgate_stream.service import _ExportGauges

    state = ExportState.build(SpansExportConfig(endpoint="127.0.0.1:9"), Telemetry(CollectorRegistry()), REDACT)
    sink = SpanSink(state)
    registry = CollectorRegistry()
    registry.register(_ExportGauges(state, sink))
    assert "faultgate_exporter_annex_cache_evictions_total 0.0" in generate_latest(registry).decode()
    key = RunKey(trace_id="0af7651916cd43dd8448eb211c80319c", root_span_id="b7ad6b7169203331")
    checks = annotate.MAX_CACHED_EVALUATIONS + 4
    v = RunVerdict(key=key, scenario="s", agent="shop", agent_version="", completion=Completion.COMPLETE,
                   results=tuple(CheckResult(f"c{i}", False, 1.0, "ok") for i in range(checks)), steps=1, spans=1,
                   root_span_id=key.root_span_id)
    # the summary, the scenario and the first MAX - 2 evaluations fill the table; the next
    # clears it (MAX forgotten) and the last six are kept
    assert sink._verdict_bytes(v, 7) == oracle.root_annex(v, 7, REDACT)  # noqa: SLF001
    assert sink.annex_evictions == annotate.MAX_CACHED_EVALUATIONS
    text = generate_latest(registry).decode()
    assert f"faultgate_exporter_annex_cache_evictions_total {annotate.MAX_CACHED_EVALUATIONS}.0" in text
