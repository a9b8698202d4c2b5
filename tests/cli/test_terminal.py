"""What the commands print for a person: labels that tell runs apart, text cut at a word."""
from __future__ import annotations

from faultgate_stream.cli.terminal import clip, run_labels, trace_labels


def test_ids_distinct_in_their_first_12_digits_keep_faultgates_label():
    ids = ["fc2cdab304bd6b5e4dbc1a9a1e3c7f01", "6d1f9d67a2d4aa0e0c7c3d5a8b9e1f02"]
    assert trace_labels(ids) == {ids[0]: "fc2cdab304bd", ids[1]: "6d1f9d67a2d4"}


def test_ids_counted_up_from_zero_show_the_head_and_enough_of_the_tail():
    ids = [f"{i:032x}" for i in range(1, 14)]  # examples/traces/retail_gaps.json's ids
    labels = trace_labels(ids)
    assert labels[ids[0]] == "0000000…0001" and labels[ids[12]] == "0000000…000d"
    assert len(set(labels.values())) == 13 and all(len(v) == 12 for v in labels.values())


def test_only_the_ids_that_collide_change_the_others_keep_faultgates_label():
    a, b, c = "abcdef0123450000000000000000aaaa", "abcdef0123450000000000000000bbbb", "1234567890ab" + "0" * 20
    labels = trace_labels([a, b, c])
    assert labels == {a: "abcdef0…aaaa", b: "abcdef0…bbbb", c: "1234567890ab"}


def test_a_tail_longer_than_four_digits_is_shown_when_four_do_not_tell_ids_apart():
    a, b = "0" * 24 + "1000ffff", "0" * 24 + "2000ffff"
    labels = trace_labels([a, b])
    assert labels == {a: "0000…1000ffff", b: "0000…2000ffff"}


def test_ids_that_differ_only_in_their_middle_are_shown_whole():
    a, b = "0" * 14 + "1" + "0" * 17, "0" * 14 + "2" + "0" * 17
    assert trace_labels([a, b]) == {a: a, b: b}


def test_runs_of_one_trace_are_told_apart_by_their_root_span():
    t, other = "fc2cdab304bd6b5e4dbc1a9a1e3c7f01", "6d1f9d67a2d4aa0e0c7c3d5a8b9e1f02"
    keys = [(t, "1111222233334444"), (t, "5555666677778888"), (t, ""), (other, "9999aaaabbbbcccc")]
    assert run_labels(keys) == {keys[0]: "fc2cdab304bd/11112222", keys[1]: "fc2cdab304bd/55556666",
                                keys[2]: "fc2cdab304bd/orphan", keys[3]: "6d1f9d67a2d4"}


def test_root_spans_that_share_their_first_8_digits_are_shown_whole():
    t = "fc2cdab304bd6b5e4dbc1a9a1e3c7f01"
    keys = [(t, "11112222aaaaaaaa"), (t, "11112222bbbbbbbb")]
    assert run_labels(keys) == {keys[0]: f"{t[:12]}/11112222aaaaaaaa", keys[1]: f"{t[:12]}/11112222bbbbbbbb"}


def test_text_that_fits_is_kept_whole_on_one_line():
    assert clip("policy: step 3   denied\nissue_refund", 90) == "policy: step 3 denied issue_refund"


def test_text_too_long_is_cut_at_the_last_word_that_fits_with_an_ellipsis():
    reason = "step 4: issue_refund.amount 900 > max 500 (the refund policy of the retail agent)"
    out = clip(reason, 40)
    assert out == "step 4: issue_refund.amount 900 > max…"
    assert len(out) <= 40 and reason.startswith(out[:-1]) and reason[len(out) - 1] == " "


def test_punctuation_before_the_cut_is_dropped():
    assert clip("one two, three four five six", 14) == "one two…"


def test_one_word_longer_than_the_width_is_cut_where_the_width_ends():
    assert clip("x" * 30, 10) == "x" * 9 + "…"


def test_a_key_with_no_space_is_cut_after_a_hyphen():
    assert clip("gap-G4-incidental-substring", 22) == "gap-G4-incidental…"
