"""Defect 15 of issue 9: ``check`` printed tracebacks (exit 1) on bad files and misread
valid JSON (``null``, a byte-order mark) as "not JSON". Every bad file: exit 2, one line."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "traces" / "traces.json"
CORPUS = Path(__file__).resolve().parents[1] / "fuzz" / "corpus"


def _check(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "faultgate_stream.cli.main", "check", str(path)],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("text,says", [("null", "valid JSON, but a null"), ('"x"', "valid JSON, but a str"),
                                       ("3", "valid JSON, but a int"), ("[]", "unrecognised trace format"),
                                       ("\ufeffnull", "valid JSON, but a null")])
def test_valid_json_that_is_no_trace_export_is_called_that(tmp_path, text, says):
    p = tmp_path / "t.json"
    p.write_text(text, encoding="utf-8")
    r = _check(p)
    assert r.returncode == 2 and "not JSON" not in r.stderr and says in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_file_with_a_byte_order_mark_is_read_as_the_json_it_is(tmp_path):
    p = tmp_path / "bom.json"
    p.write_bytes(b"\xef\xbb\xbf" + EXAMPLE.read_bytes())
    r = _check(p)
    assert r.returncode in (0, 1), r.stderr
    assert r.stdout == _check(EXAMPLE).stdout.replace(str(EXAMPLE), str(p)) or "traces failed" in r.stdout


@pytest.mark.parametrize("name", ["status_not_an_object", "scope_spans_not_a_list", "resource_spans_item_not_an_object",
                                  "attribute_key_not_a_string", "kvlist_item_without_key", "int_value_of_5000_digits"])
def test_a_malformed_trace_file_exits_2_with_one_line_and_no_traceback(name):
    r = _check(CORPUS / f"{name}.json")
    assert r.returncode == 2, r.stderr[-500:]
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    json.loads((CORPUS / f"{name}.json").read_text())  # the file itself is valid JSON
