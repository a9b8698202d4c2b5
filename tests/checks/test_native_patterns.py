"""abstention's and context_overflow's phrase patterns, compiled on Rust's ``regex``
(native/core/src/checks/pattern.rs), match what Python's ``re`` matched, to the character: on
generated text, on every recorded answer, and for every code point where Python's
definitions of ``\\w``, ``\\s``, ``\\b``, ``.`` and ``re.I`` could differ from Rust's."""
from __future__ import annotations

import re
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faultgate_stream import _native
from tests.checks import checks_oracle as oracle
from tests.model.native_inputs import recorded_runs

KELVIN, LONG_S, DOTLESS_I, DOTTED_I = "\u212a", "\u017f", "\u0131", "\u0130"
WORDS = ["could", "couldn't", "couldn’t", "not", "find", "locate", "look", "up", "lookup", "no", "matching",
         "documents", "information", "record", "results", "was", "were", "is", "found", "available", "don't",
         "do", "have", "that", "any", "the", "know", "I", "cannot", "unable", "to", "failed", "retrieve",
         "context", "length", "exceeded", "window", "overflow", "exceeds", "model's", "token", "tokens", "limit",
         "maximum", "max_tokens", "max", "reached", "prompt", "too", "long", "many", "input", "requested",
         "number", "of", "wasn't", "able", "did", "data", "sources", f"{DOTTED_I}nformation", f"f{DOTLESS_I}nd",
         f"{LONG_S}ources", f"to{KELVIN}ens", "Ünïcödé", "x²", "_", "42"]
SEPARATORS = [" ", "  ", "\n", "\t", "\u3000", "\u00a0", "\x1c", "-", "_", ".", ",", "é", "\u0301", "²", "’"]


@st.composite
def phrases(draw):
    n = draw(st.integers(1, 12))
    out = []
    for _ in range(n):
        w = draw(st.sampled_from(WORDS))
        out.append(w.upper() if draw(st.integers(0, 5)) == 0 else w)
        out.append(draw(st.sampled_from(SEPARATORS)))
    return "".join(out)


def _python(rx: re.Pattern, text: str) -> str | None:
    m = rx.search(text)
    return m.group(0) if m else None


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(phrases() | st.text(max_size=40))
def test_both_patterns_match_what_python_matches(text):
    assert _native.abstention_phrase(text) == _python(oracle.ABSTAIN, text)
    assert _native.overflow_phrase(text) == _python(oracle.OVERFLOW, text)


def test_every_recorded_answer_and_status_is_matched_as_python_matches_it():
    seen = 0
    for run in recorded_runs():
        for text in {run.answer, run.termination, *(s.status_message for s in run.spans),
                     *(st.result for st in run.steps)}:
            assert _native.abstention_phrase(text) == _python(oracle.ABSTAIN, text)
            assert _native.overflow_phrase(text) == _python(oracle.OVERFLOW, text)
            seen += 1
    assert seen > 1000


def test_every_code_point_is_a_word_a_space_a_letter_or_other_as_python_reads_it():
    """Probes where the answer turns on one character: whether it is a word character
    (``\\b`` before and after), white space (``\\s``), a newline (``.``) or a letter."""
    probes = [(oracle.ABSTAIN, _native.abstention_phrase, "{}not found"),
              (oracle.ABSTAIN, _native.abstention_phrase, "not found{}"),
              (oracle.ABSTAIN, _native.abstention_phrase, "could not{}find"),
              (oracle.ABSTAIN, _native.abstention_phrase, "couldn{}t locate"),
              (oracle.OVERFLOW, _native.overflow_phrase, "exceeds{}the token limit")]
    for cp in range(sys.maxunicode + 1):
        c = chr(cp)
        for rx, native, probe in probes:
            text = probe.format(c)
            assert native(text) == _python(rx, text), (hex(cp), probe)


def test_only_four_characters_beyond_ascii_are_ascii_letters_to_re_ignorecase():
    """pattern.rs maps exactly these onto ASCII letters in a text's shadow."""
    letters = re.compile("[a-z]", re.I)
    found = {chr(cp): chr(cp).lower() for cp in range(128, sys.maxunicode + 1) if letters.fullmatch(chr(cp))}
    assert set(found) == {DOTTED_I, DOTLESS_I, LONG_S, KELVIN}
    for c, letter in ((DOTTED_I, "i"), (DOTLESS_I, "i"), (LONG_S, "s"), (KELVIN, "k")):
        assert re.fullmatch(letter, c, re.I)
        for text in (f"no data{c}", f"could not f{c}nd", f"{c}nformation not found", f"too many to{c}ens"):
            assert _native.abstention_phrase(text) == _python(oracle.ABSTAIN, text)
            assert _native.overflow_phrase(text) == _python(oracle.OVERFLOW, text)
    assert _native.abstention_phrase(f"{DOTLESS_I}nformation not found") == f"{DOTLESS_I}nformation not found"


def test_only_two_characters_beyond_ascii_lower_to_ascii():
    """pattern.rs's reading of ``str.lower()`` for ASCII words (step-cap words, finish reasons)."""
    to_ascii = {chr(cp) for cp in range(128, sys.maxunicode + 1) if any(ord(x) < 128 for x in chr(cp).lower())}
    assert to_ascii == {DOTTED_I, KELVIN}


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet=f"maxMAX_ steplimitcaLENGTHk{KELVIN}{DOTTED_I}{LONG_S}é", max_size=14),
       st.sampled_from(["max_steps", "step limit", "length", "max_tokens", "iteration limit", "i"]))
def test_lower_reads_as_python_lowers(text, word):
    assert _native.lower_matches(text, word) == (word in text.lower(), text.lower() == word)
