"""``check --html``: the page opened in a real headless chromium (Debian's, through
playwright), its DOM read after the browser laid it out and ran its script.

The runs are made with the OpenTelemetry SDK and written as its own span dump
(``ReadableSpan.to_json()``), one of the formats ``check`` reads."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.browser import chromium
from tests.genai_sdk import tool_run

EMAIL = "jane.doe@example.com"
SPEC = "tools: [read_file, lookup, fetch, list_dir, send_email]\nground: true\nsecrets: false\n"
FIRED_BACKGROUND = "rgb(253, 231, 229)"  # report.css: --fired


def _write_runs(path: Path) -> dict[str, str]:
    """Six runs: clean, a tool error at step 2, an abstaining answer (no step), undecided
    (no finish reasons), an unknown e-mail address sent at step 1, a path traversal at
    step 2. Returns the span ids of the steps where checks fire, by what fires there (and
    the step before the tool error's, where nothing fires)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    prompt = "help me with README.md and NOTES.md"

    def run(agent: str, tools: list[tuple], **kw) -> list[str]:
        return tool_run(tracer, agent, tools, prompt=prompt, tokens=True, **kw)[1]

    run("files", [("read_file", {"path": "README.md"}, "hello", True)])
    lookup, fetch = run("search", [("lookup", {"q": 1}, "found", True), ("fetch", {"id": 7}, "Error: backend down", False)])
    run("lookup", [("lookup", {"q": 2}, "none", True)], answer=f"No matching source for {EMAIL}.")
    run("files", [("read_file", {"path": "NOTES.md"}, "notes", True)], finish=False)
    (mail,) = run("mailer", [("send_email", {"to": EMAIL, "body": "hi"}, "sent", True)])
    _, passwd = run("files", [("list_dir", {"path": "."}, "a b", True),
                              ("read_file", {"path": "../../etc/passwd"}, "root:x:0:0", True)])
    path.write_text(json.dumps([json.loads(s.to_json()) for s in exporter.get_finished_spans()]))
    return {"lookup": lookup, "unrecovered_tool_error": fetch, "trajectory.ground": mail, "policy": passwd}


def _check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "faultgate_stream.cli.main", "check", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def report(tmp_path: Path) -> tuple[Path, dict, dict[str, str]]:
    traces, spec = tmp_path / "traces.json", tmp_path / "spec.yaml"
    marked = _write_runs(traces)
    spec.write_text(SPEC)
    page, doc = tmp_path / "out" / "report.html", tmp_path / "report.json"
    p = _check(str(traces), "--spec", str(spec), "--html", str(page), "--json", str(doc))
    assert p.returncode == 1, p.stderr  # a hard check fired
    assert f"HTML report written to {page}" in p.stdout
    return page, json.loads(doc.read_text()), marked


def _open(browser, page_path: Path, requests: list[str]):
    page = browser.new_page()
    page.on("request", lambda r: requests.append(r.url))
    page.goto(page_path.as_uri())
    return page


def test_the_page_renders_in_chromium_counting_the_failed_runs_and_marking_each_fired_step(report, tmp_path):
    page_path, doc, marked = report
    verdicts = [r["verdict"] for r in doc["runs"]]
    assert verdicts.count("failed") == 4 and verdicts.count("undecided") == 1 and verdicts.count("clean") == 1
    requests: list[str] = []
    with chromium(tmp_path / "profile") as browser:
        page = _open(browser, page_path, requests)
        shot = tmp_path / "report.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000

        assert page.inner_text("#count-failed") == "4" and page.inner_text("#count-undecided") == "1"
        assert page.locator('details.run[data-verdict="failed"]').count() == 4
        assert page.locator("details.run").count() == 6

        for check, span_id in marked.items():
            if check == "lookup":
                continue
            row = page.locator(f'tr.span[data-span-id="{span_id}"]')
            run = page.locator("details.run", has=row)
            run.locator("summary").click()  # open the run: its timeline is shown
            assert row.is_visible()
            assert check in row.get_attribute("data-fired").split()
            assert "fired" in row.get_attribute("class").split()
            # drawn as marked, not only classed: the row's cells have the highlight
            assert row.locator("td.step").evaluate("td => getComputedStyle(td).backgroundColor") == FIRED_BACKGROUND
            why = row.locator("xpath=following-sibling::tr[1]")
            assert "why" in why.get_attribute("class") and why.get_attribute("data-check") == check
            assert why.is_visible() and "fired here" in why.inner_text()
            page.screenshot(path=str(tmp_path / f"{check}.png"), full_page=True)
        # the tool error names step 2, the fetch: the lookup before it is not marked
        lookup = page.locator(f'tr.span[data-span-id="{marked["lookup"]}"]')
        assert "fired" not in lookup.get_attribute("class").split()
        assert "failed at step 2" in page.locator(f'tr.span[data-span-id="{marked["unrecovered_tool_error"]}"] + tr.why'
                                                  ).inner_text()
        # abstention judges the answer: the run as a whole, no step marked
        abstained = page.locator('details.run[data-fired="abstention"]')
        abstained.locator("summary").click()
        assert "(the run as a whole)" in abstained.locator("li.finding").inner_text()
        assert abstained.locator("tr.span.fired").count() == 0
        # masked like every report: the address is in a reason, never on the page
        content = page.content()
        assert EMAIL not in content and "&lt;EMAIL&gt;" in content
    # self-contained: the page asked for nothing but itself
    assert requests == [page_path.as_uri()]


def test_the_filters_show_the_runs_where_a_check_fired_and_the_runs_of_a_verdict(report, tmp_path):
    page_path, doc, _ = report
    with chromium(tmp_path / "profile") as browser:
        page = _open(browser, page_path, [])
        visible = 'details.run:not([hidden])'
        assert page.locator(visible).count() == 6
        page.select_option("#filter-check", "policy")
        assert page.locator(visible).count() == 1
        assert page.locator(visible).get_attribute("data-fired").split() == ["policy", "trajectory.ground"]
        page.select_option("#filter-check", "")
        page.select_option("#filter-verdict", "failed")
        assert page.locator(visible).count() == 4
        assert page.inner_text("#shown") == "4 of 6 runs shown"
        page.select_option("#filter-verdict", "undecided")
        assert page.locator(visible).count() == 1
        page.select_option("#filter-check", "trajectory.ground")  # fired on failed runs only
        assert page.locator(visible).count() == 0


def test_with_a_band_the_gate_plot_places_the_clean_rate_against_the_band(report, tmp_path):
    page_path, _, _ = report
    traces = tmp_path / "traces.json"
    band = tmp_path / "band.json"
    copies = []
    for i in range(3):  # three baseline runs of the same agent: a band needs several
        copies.append(tmp_path / f"baseline-{i}.json")
        copies[-1].write_bytes(traces.read_bytes())
    p = subprocess.run([sys.executable, "-m", "faultgate_stream.cli.main", "baseline", *map(str, copies),
                        "--out", str(band)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    gated, doc = tmp_path / "gated.html", tmp_path / "gated.json"
    _check(str(traces), "--spec", str(tmp_path / "spec.yaml"), "--band", str(band), "--html", str(gated),
           "--json", str(doc))
    gate = json.loads(doc.read_text())["gate"]
    with chromium(tmp_path / "profile") as browser:
        page = _open(browser, gated, [])
        assert page.get_attribute("#gate", "data-verdict") == gate["verdict"]
        band_box = page.locator("#gate-band").bounding_box()
        dot = page.locator("#gate-rate").bounding_box()
        axis = page.locator("#gate-plot line.axis").bounding_box()
        # the dot's centre sits at clean_rate along the axis, the band spans [min, max] of it
        at = lambda v: axis["x"] + axis["width"] * v  # noqa: E731
        assert dot["x"] + dot["width"] / 2 == pytest.approx(at(gate["clean_rate"]), abs=1.5)
        lo, hi = gate["band"]
        assert band_box["x"] + band_box["width"] / 2 == pytest.approx(at((lo + hi) / 2), abs=1.5)
        # its outline adds a pixel, and a band of identical runs is drawn a pixel wide to be seen
        assert band_box["width"] == pytest.approx(max(axis["width"] * (hi - lo), 1), abs=2.5)
