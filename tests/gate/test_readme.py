"""faultgate's README, "Regression or noise? Tolerance bands", reproduced to the digit:
the same commands on the same shipped runs print the same numbers."""
from __future__ import annotations

import json

from faultgate_stream.cli.main import main

ABSTAINED = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "I couldn't find the information."}]}])


def _run(capsys, *argv):
    code = main(list(map(str, argv)))
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_the_structural_band_and_its_three_gates(corpus, tmp_path, capsys):
    g = corpus / "faultgate-0.4.1" / "examples" / "gate"
    band = tmp_path / "band.json"
    code, out, err = _run(capsys, "baseline", g / "baseline_glm_run1.json", g / "baseline_glm_run2.json", "--out", band)
    assert code == 0
    assert "note: 2 baseline runs measure noise poorly; use 3 or more" in err
    assert f"{g / 'baseline_glm_run1.json'}: 30 traces · clean rate 0.93 · " in out
    assert f"{g / 'baseline_glm_run2.json'}: 30 traces · clean rate 0.93 · " in out
    assert f"band [0.93, 0.93] over 30 scenarios × 2 runs · 26 clean in every run · written to {band}" in out

    code, out, _ = _run(capsys, "check", g / "candidate_gpt.json", "--band", band)
    assert code == 1
    assert ("18/30 traces failed · search_loop=18, abstention=0, policy=0, repeated_call=0, "
            "unrecovered_tool_error=0, context_overflow=0 · judge none · ") in out
    assert "gate: FAIL · clean rate 0.40 vs band [0.93, 0.93] from 2 baseline runs · fail below 0.83 · p=0.000" in out
    assert ("regressions (clean in every baseline, not now): r-0208, r-0214, r-0216, r-0224, r-0226, r-0232, "
            "r-0258, ...") in out

    code, out, _ = _run(capsys, "check", g / "candidate_qwen.json", "--band", band)
    assert code == 1
    assert "gate: FAIL · clean rate 0.70 vs band [0.93, 0.93] from 2 baseline runs · fail below 0.83 · p=0.005" in out

    code, out, _ = _run(capsys, "check", g / "baseline_glm_run2.json", "--band", band)
    assert code == 0  # two traces fired, and the gate passes: with a band only FAIL exits 1
    assert "gate: PASS · clean rate 0.93 vs band [0.93, 0.93] from 2 baseline runs · fail below 0.83 · p=0.500" in out


def test_the_golden_band_lands_on_p11s_numbers(corpus, tmp_path, capsys):
    g = corpus / "faultgate-0.4.1" / "examples" / "gate"
    band, golden = tmp_path / "band.json", g / "golden.json"
    code, out, _ = _run(capsys, "baseline", g / "baseline_glm_run1.json", g / "baseline_glm_run2.json",
                        "--golden", golden, "--out", band)
    assert code == 0
    assert "baseline_glm_run1.json: 30 traces · clean rate 0.80 · " in out
    assert "baseline_glm_run2.json: 30 traces · clean rate 0.87 · " in out
    assert "band [0.80, 0.87] over 30 scenarios × 2 runs · 21 clean in every run" in out
    # the band we write is faultgate's shipped band, field for field, but for the check list
    # (faultgate's band predates three of its checks), and then our trajectories (for drift;
    # faultgate reads a band by key and ignores it)
    shipped = json.loads((g / "band.json").read_text())
    ours = json.loads(band.read_text())
    assert list(ours) == list(shipped) + ["trajectories"]
    assert {k: v for k, v in ours.items() if k not in ("checks", "trajectories")} == {
        k: v for k, v in shipped.items() if k != "checks"}
    assert ours["trajectories"]["faultline-agent"][""]["runs"] == 60

    code, out, _ = _run(capsys, "check", g / "candidate_gpt.json", "--golden", golden, "--band", band)
    assert code == 1
    assert ("21/30 traces failed · search_loop=18, abstention=0, policy=0, repeated_call=0, unrecovered_tool_error=0, "
            "context_overflow=0, wrong_answer=3, truncation=3 · judge none · ") in out
    assert "gate: FAIL · clean rate 0.30 vs band [0.80, 0.87] from 2 baseline runs · fail below 0.70 · p=0.000" in out

    code, out, _ = _run(capsys, "check", g / "candidate_qwen.json", "--golden", golden, "--band", band)
    assert code == 1
    assert ("18/30 traces failed · search_loop=9, abstention=0, policy=0, repeated_call=1, unrecovered_tool_error=0, "
            "context_overflow=0, wrong_answer=9, truncation=8 · judge none · ") in out
    assert "gate: FAIL · clean rate 0.40 vs band [0.80, 0.87] from 2 baseline runs · fail below 0.70 · p=0.000" in out


def test_two_failures_injected_into_a_clean_baseline_are_inconclusive_and_sized(corpus, tmp_path, capsys):
    """README: "Two failures injected into a run of a baseline that was clean on all 30
    scenarios". Clean on all 30: the glm runs under ``abstention`` alone; the failures: two
    final answers rewritten to abstain."""
    g = corpus / "faultgate-0.4.1" / "examples" / "gate"
    band = tmp_path / "band.json"
    code, out, _ = _run(capsys, "baseline", g / "baseline_glm_run1.json", g / "baseline_glm_run2.json",
                        "--check", "abstention", "--out", band)
    assert "band [1.00, 1.00] over 30 scenarios × 2 runs · 30 clean in every run" in out
    doc = json.loads((g / "baseline_glm_run1.json").read_text())
    roots = [s for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]
             if s["name"] == "invoke_agent" and not s.get("parentSpanId")]
    for root in roots[:2]:
        root["attributes"] = [a for a in root["attributes"] if a["key"] != "gen_ai.output.messages"]
        root["attributes"].append({"key": "gen_ai.output.messages", "value": {"stringValue": ABSTAINED}})
    candidate = tmp_path / "candidate.json"
    candidate.write_text(json.dumps(doc))
    code, out, _ = _run(capsys, "check", candidate, "--check", "abstention", "--band", band, "--json", tmp_path / "r.json")
    assert code == 0  # INCONCLUSIVE does not fail the build
    assert "gate: INCONCLUSIVE · clean rate 0.93 vs band [1.00, 1.00] from 2 baseline runs · fail below 0.90 · p=0.072" in out
    assert ("inconclusive: a drop of 0.07 needs 89 scenarios to tell from noise (alpha 0.05, power 0.80) · run 59 more"
            in out)
    stats = json.loads((tmp_path / "r.json").read_text())["gate"]["stats"]
    assert (stats["required_n"], stats["additional_n"]) == (89, 59)
    assert stats["alpha"] == 0.05 and stats["power"] == 0.8
