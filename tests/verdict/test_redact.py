"""Masking of personal data and secrets in what leaves the process."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from faultgate_stream.verdict import redact as redact_module
from faultgate_stream.verdict.redact import NAMES, Redactor, builtin, get_redactor, off, safe_key

redact = builtin()

# Key-shaped examples are written in pieces so that this file holds no literal a secret
# scanner would flag; the joined strings are what the redactor sees.
OPENAI_KEY = "sk-" "proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
ANTHROPIC_KEY = "sk-" "ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe-AbCdEfGh"
STRIPE_KEY = "sk_" "live_" "51HqL9cKZvR3mT8pW2xY4nB6d"
STRIPE_RESTRICTED_KEY = "rk_" "test_" "51HqL9cKZvR3mT8pW2xY4nB6d"
AWS_KEY_ID = "AKIA" "IOSFODNN7EXAMPLE"
AWS_TEMPORARY_KEY_ID = "ASIA" "IOSFODNN7EXAMPLE"
GITHUB_TOKEN = "ghp_" "1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R"
GITHUB_FINE_GRAINED_TOKEN = "github_" "pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123"
SLACK_TOKEN = "xox" "b-2048123456-4096123456-aBcDeFgHiJkLmNoPqRsTuVwX"
GOOGLE_API_KEY = "AIza" "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
GOOGLE_OAUTH_TOKEN = "ya29" ".a0AfH6SMBx3kLmNoPqRsTuVwXyZ-0123456789"
SENDGRID_KEY = "SG" ".ngeVfQFYQlKU0ufo8x5d1A.TwL2iGABf9DHoTf-09kqeF8tAmbihYzrnopKc-1s5cr"
HUGGING_FACE_TOKEN = "hf_" "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
JWT = (
    "eyJ" "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)


# --- each kind is masked ----------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("refund sent to jane.doe@example.com", "refund sent to <EMAIL>"),
    ("cc billing+eu@shop.example.co.uk on it", "cc <EMAIL> on it"),
    ("reply to <ops_team@mail.example.org>", "reply to <<EMAIL>>"),
    ("Email bob@example.com.", "Email <EMAIL>."),
])
def test_an_email_address_is_masked(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("card 4111111111111111 charged", "card <CREDIT_CARD> charged"),
    ("card 4111 1111 1111 1111 charged", "card <CREDIT_CARD> charged"),
    ("card 5500-0000-0000-0004 declined", "card <CREDIT_CARD> declined"),
    ("Amex 3782 822463 10005 on file", "Amex <CREDIT_CARD> on file"),
    ("Amex 378282246310005.", "Amex <CREDIT_CARD>."),
    ("card=4111111111111111&cvv=123", "card=<CREDIT_CARD>&cvv=123"),
])
def test_a_luhn_valid_card_is_masked_however_its_digits_are_grouped(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_a_card_followed_by_an_ssn_has_both_masked() -> None:
    assert redact("card 4111 1111 1111 1111 123-45-6789 in one field") == "card <CREDIT_CARD> <US_SSN> in one field"


def test_a_card_written_next_to_an_order_number_is_masked_and_the_order_number_kept() -> None:
    assert redact("paid 4111 1111 1111 1111 5555 today") == "paid <CREDIT_CARD> 5555 today"
    assert redact("order 5555 4111 1111 1111 1111 paid") == "order 5555 <CREDIT_CARD> paid"


def test_a_card_followed_by_an_amount_is_still_masked() -> None:
    assert redact("Charged 4111 1111 1111 1111 1200.50 USD") == "Charged <CREDIT_CARD> 1200.50 USD"


@pytest.mark.parametrize("text, expected", [
    ("SSN 078-05-1120 was pasted into the chat", "SSN <US_SSN> was pasted into the chat"),
    ("ssn=123-45-6789", "ssn=<US_SSN>"),
])
def test_a_us_social_security_number_is_masked(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize("text", ["000-12-3456", "666-12-3456", "900-12-3456", "123-00-4567", "123-45-0000"])
def test_ssn_shapes_from_never_issued_ranges_are_left_alone(text: str) -> None:
    assert redact(f"id {text} here") == f"id {text} here"


@pytest.mark.parametrize("text, expected", [
    ("call (555) 123-4567 after 5pm", "call <PHONE> after 5pm"),
    ("call 555.987.6543 or 555-123-4567", "call <PHONE> or <PHONE>"),
    ("US +1 555 123 4567, ext 12", "US <PHONE>, ext 12"),
    ("London +44 20 7946 0958", "London <PHONE>"),
    ("sms +15551234567 now", "sms <PHONE> now"),
    ("call me at 555-123-4567.", "call me at <PHONE>."),
    ("office (555) 123-4567, mobile +1 555 987 6543", "office <PHONE>, mobile <PHONE>"),
])
def test_a_phone_number_is_masked(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("request from 192.168.1.20 via 10.0.0.1:8080", "request from <IP_ADDRESS> via <IP_ADDRESS>:8080"),
    ("connect to 10.0.0.1.", "connect to <IP_ADDRESS>."),
    ("peer 2001:0db8:85a3:0000:0000:8a2e:0370:7334 timed out", "peer <IP_ADDRESS> timed out"),
    ("link-local fe80::1 and 2001:db8::8a2e:370:7334", "link-local <IP_ADDRESS> and <IP_ADDRESS>"),
    ("url http://[2001:db8::1]:8080/health", "url http://[<IP_ADDRESS>]:8080/health"),
    ("mapped ::ffff:192.0.2.1 seen", "mapped ::ffff:<IP_ADDRESS> seen"),
])
def test_ipv4_and_ipv6_addresses_are_masked(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize("key", [
    OPENAI_KEY, ANTHROPIC_KEY, STRIPE_KEY, STRIPE_RESTRICTED_KEY, AWS_KEY_ID, AWS_TEMPORARY_KEY_ID,
    GITHUB_TOKEN, GITHUB_FINE_GRAINED_TOKEN, SLACK_TOKEN, GOOGLE_API_KEY, GOOGLE_OAUTH_TOKEN,
    SENDGRID_KEY, HUGGING_FACE_TOKEN,
], ids=[
    "openai", "anthropic", "stripe", "stripe-restricted", "aws", "aws-temporary", "github",
    "github-fine-grained", "slack", "google-api", "google-oauth", "sendgrid", "hugging-face",
])
def test_an_api_key_is_masked_wherever_it_stands(key: str) -> None:
    assert redact(f"key {key} was logged") == "key <SECRET> was logged"
    assert redact(f"API_KEY={key}") == "API_KEY=<SECRET>"
    assert redact(f'{{"token": "{key}"}}') == '{"token": "<SECRET>"}'


@pytest.mark.parametrize("text, expected", [
    ("Authorization: Bearer abc123DEF456ghi789JKL0mno", "Authorization: Bearer <SECRET>"),
    ("authorization: bearer abc123DEF456ghi789JKL0mno==", "authorization: bearer <SECRET>"),
    ("header BEARER abc123DEF456ghi789JKL0mno/x+y", "header BEARER <SECRET>"),
])
def test_the_token_after_bearer_is_masked_and_the_word_bearer_kept(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_a_json_web_token_is_masked() -> None:
    assert redact(f"token {JWT} expired") == "token <SECRET> expired"
    assert redact(f"Authorization: Bearer {JWT}") == "Authorization: Bearer <SECRET>"


# --- what must not be masked ------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "order 1234567812345678 shipped to the depot",           # 16 digits, fails Luhn
    "card 4111 1111 1111 1112 was mistyped",                  # card-shaped, fails Luhn
    "measured 1234.5678 units",                               # a decimal
    "due 2026-11-29 at noon",                                 # a date
    "ticket o-7 reopened",                                    # a short id
    "paid $1,200.50 and $14,999.99 in total",                 # amounts
    "version 1.2.3.4.5 and build 10.0.0.1.2 are both fine",   # dotted runs longer than an address
    "local number 555-1234 only",                             # too few digits for a phone
    "slice x[1::2] and y[::-1]",                              # Python slices, not IPv6
    "at 12:30:45 the MAC 00:1a:2b:3c:4d:5e went up",          # times and MACs, not IPv6
    "key sk-short is not a key",                              # prefix without a key's length
    "Bearer token was missing",                               # no token after the word
    "the agent called search_orders three times and gave up",
    "tool search_orders(customer_id=42) returned 3 rows in 120 ms",
])
def test_values_that_only_look_like_personal_data_are_left_alone(text: str) -> None:
    assert redact(text) == text


def test_empty_text_is_returned_as_is() -> None:
    assert redact("") == ""


# --- idempotence ------------------------------------------------------------------------

MIXED = (
    f"user jane.doe@example.com paid with 4111 1111 1111 1111 123-45-6789 from 10.0.0.1 "
    f"and fe80::1, call (555) 123-4567 or +15551234567; Bearer abc123DEF456ghi789JKL0mno, "
    f"{JWT} {OPENAI_KEY} {AWS_KEY_ID}. Amount $1,200.50 on 2026-11-29, order 1234567812345678."
)


def test_redacting_twice_gives_the_same_text_as_redacting_once() -> None:
    once = redact(MIXED)
    assert once != MIXED
    assert redact(once) == once


_VALUES = [
    "jane.doe@example.com", "4111 1111 1111 1111", "4111-1111-1111-1111", "4111111111111111",
    "3782 822463 10005", "123-45-6789", "000-12-3456", "555-123-4567", "(555) 123-4567",
    "+1 555 123 4567", "+15551234567", "555.123.4567", "10.0.0.1", "192.168.1.254", "2001:db8::1",
    "fe80::1", "2001:0db8:85a3:0000:0000:8a2e:0370:7334", "Bearer abc123DEF456ghi789JKL0mno", JWT,
    OPENAI_KEY, AWS_KEY_ID, GITHUB_TOKEN, "1234.5678", "1200.50", "$1,200.50", "2026-11-29", "o-7",
    "v1.2.3.4", "1::2", "the", "order", "call",
]
_SEPARATORS = [" ", ", ", "; ", "\n", " (", ") ", ": ", " - ", ". "]
_prose = st.lists(
    st.one_of(st.sampled_from(_VALUES), st.integers(0, 10**7).map(str)), min_size=1, max_size=8,
).flatmap(lambda parts: st.lists(
    st.sampled_from(_SEPARATORS), min_size=len(parts), max_size=len(parts),
).map(lambda seps: "".join(p + s for p, s in zip(parts, seps))))


@settings(max_examples=300, deadline=None)
@given(_prose)
def test_redacting_twice_gives_the_same_text_as_redacting_once_for_any_mix_of_values(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


@settings(max_examples=300, deadline=None)
@given(st.one_of(_prose, st.text(alphabet="0123456789 .-:+()@abcdefAKIS_xeyJ", max_size=60)))
def test_the_cheap_substring_gates_never_skip_a_match(text: str) -> None:
    # the gates exist for speed only: running every pattern unconditionally must agree
    ungated = text
    for rule in redact_module._RULES:
        ungated = rule.apply(ungated)
    assert redact(text) == ungated


_GATE_WORDS = ["PRIVATE KEY-----", "secret", "SECRET", "eyJ", "bearer ", "BeArEr ", "sk-", "xoxb-", "xapp-",
               "rk_", "ghp_", "gh", "_", "hf_", "ya29.", "SG.", "AKIA", "ASIA", "AIza", "@", "::", ":", "/", "+",
               ".", "-", "1", "12", "1234", "123456789", "\u0663\u0664", "answered", " "]


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.lists(st.sampled_from(_GATE_WORDS), max_size=12).map("".join),
                 st.text(alphabet="0123456789 .-:+/()@_abcdefghjkorsxyAEGIKPRSTVYJ", max_size=60), _prose))
def test_the_one_scan_before_the_gates_never_says_none_opens_when_one_does(text: str) -> None:
    # _no_gate_opens skips all thirteen gates: it must be a superset of every one of them
    digits = redact_module._count_digits(text)
    opened = [r.tag for r in redact_module._RULES if r.could_match(text, digits)]
    assert not (opened and redact_module._no_gate_opens(text, digits)), (text, opened)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_digits_are_counted_as_the_patterns_read_them(text: str) -> None:
    assert redact_module._count_digits(text) == sum(ch.isdecimal() for ch in text)


# --- worst-case inputs ------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "a" * 200_000,
    "1 " * 100_000,
    "@" * 100_000,
    "1" * 200_000,
    "123 " * 50_000,
    "555-" * 50_000,
    "1234." * 40_000,
    "a@" * 100_000,
    "a:" * 100_000,
    "::" * 100_000,
    "Bearer " * 30_000,
    "sk-" * 70_000,
    "eyJ" + "a." * 100_000,
    "x@" + "y." * 100_000,
    "+1 " * 70_000,
], ids=lambda t: repr(t[:8]) + f"..{len(t)}")
def test_a_pathological_input_of_200_kb_completes(text: str) -> None:
    # no time limit is asserted: the patterns are bounded, so these finish in well under
    # a second; a backtracking regression would hang here instead
    out = redact(text)
    assert isinstance(out, str)


def test_a_pathological_input_with_values_in_it_still_masks_them() -> None:
    text = "a" * 100_000 + " jane.doe@example.com " + "1 " * 50_000
    out = redact(text)
    assert "<EMAIL>" in out
    assert "jane.doe" not in out


# --- the same results as faultgate 0.4.1 --------------------------------------------------

# Outputs of faultgate 0.4.1's builtin redactor (faultgate.redact.builtin()) on these inputs,
# recorded by running it; the two tools must write the same reasons.
FAULTGATE_0_4_1 = [
    ("refund sent to jane.doe+billing@example.co.uk after review", "refund sent to <EMAIL> after review"),
    ("charged card 4111 1111 1111 1111 for order o-7", "charged card <CREDIT_CARD> for order o-7"),
    ("card 5500-0000-0000-0004 declined, retry", "card <CREDIT_CARD> declined, retry"),
    ("Amex 3782 822463 10005 on file", "Amex <CREDIT_CARD> on file"),
    ("card 4111 1111 1111 1111 123-45-6789 in one field", "card <CREDIT_CARD> <US_SSN> in one field"),
    ("SSN 078-05-1120 was pasted into the chat", "SSN <US_SSN> was pasted into the chat"),
    ("SSN 000-12-3456 is not a real number", "SSN 000-12-3456 is not a real number"),
    ("call (555) 123-4567 or 555.987.6543 after 5pm", "call <PHONE> or <PHONE> after 5pm"),
    ("London office +44 20 7946 0958, ext 12", "London office <PHONE>, ext 12"),
    ("request from 192.168.1.20 via 10.0.0.1:8080", "request from <IP_ADDRESS> via <IP_ADDRESS>:8080"),
    ("peer 2001:0db8:85a3:0000:0000:8a2e:0370:7334 timed out", "peer <IP_ADDRESS> timed out"),
    ("Authorization: Bearer abc123DEF456ghi789JKL0mno", "Authorization: Bearer <SECRET>"),
    (f"token {JWT} expired", "token <SECRET> expired"),
    (f"OPENAI_API_KEY={OPENAI_KEY}", "OPENAI_API_KEY=<SECRET>"),
    (f"key {ANTHROPIC_KEY} was logged", "key <SECRET> was logged"),
    (f"stripe {STRIPE_KEY} in config", "stripe <SECRET> in config"),
    (f"aws_access_key_id = {AWS_KEY_ID}", "aws_access_key_id = <SECRET>"),
    (f"cloned with {GITHUB_TOKEN}", "cloned with <SECRET>"),
    (f"slack {SLACK_TOKEN} posted", "slack <SECRET> posted"),
    (f"maps key {GOOGLE_API_KEY} in page", "maps key <SECRET> in page"),
    (f"mail {SENDGRID_KEY} sent", "mail <SECRET> sent"),
    (f"hub token {HUGGING_FACE_TOKEN} used", "hub token <SECRET> used"),
    ("order 1234567812345678 shipped to the depot", "order 1234567812345678 shipped to the depot"),
    ("paid $1,200.50 on 2026-11-29 for 1234.5678 units, ticket o-7",
     "paid $1,200.50 on 2026-11-29 for 1234.5678 units, ticket o-7"),
    ("version 1.2.3.4.5 and build 10.0.0.1.2 are both fine", "version 1.2.3.4.5 and build 10.0.0.1.2 are both fine"),
    ("short local number 555-1234 only", "short local number 555-1234 only"),
    ("tool search_orders(customer_id=42) returned 3 rows in 120 ms",
     "tool search_orders(customer_id=42) returned 3 rows in 120 ms"),
]


@pytest.mark.parametrize("text, faultgate", FAULTGATE_0_4_1)
def test_the_output_matches_faultgate_0_4_1_builtin_redaction(text: str, faultgate: str) -> None:
    assert redact(text) == faultgate


# Inputs where faultgate 0.4.1 lets a value through. Each is a leak, not a matter of taste,
# so ours masks it; the middle column is faultgate's output, recorded like the ones above.
FAULTGATE_0_4_1_LEAKS = [
    # its card run must end at a space or a full stop, so a following "1200.50" hides the card
    ("Charged 4111 1111 1111 1111 1200.50 USD", "Charged 4111 1111 1111 1111 1200.50 USD",
     "Charged <CREDIT_CARD> 1200.50 USD"),
    # same, with a dotted phone after the card: the card, and then the phone, stay raw
    ("card 4111111111111111 555.123.4567 on the same line", "card 4111111111111111 555.123.4567 on the same line",
     "card <CREDIT_CARD> <PHONE> on the same line"),
    # an address or a phone that ends a sentence is refused because of the full stop
    ("connect to 10.0.0.1.", "connect to 10.0.0.1.", "connect to <IP_ADDRESS>."),
    ("call me at 555-123-4567.", "call me at 555-123-4567.", "call me at <PHONE>."),
    # only the full eight-group IPv6 form is known to it; "::" is how addresses are written
    ("link-local fe80::1 and 2001:db8::8a2e:370:7334", "link-local fe80::1 and 2001:db8::8a2e:370:7334",
     "link-local <IP_ADDRESS> and <IP_ADDRESS>"),
    # E.164, the form phone APIs store, has no separator for its phone shape to find
    ("call +15551234567 now", "call +15551234567 now", "call <PHONE> now"),
    # a "(" opens a new number; it reads "12 (555) 123-4567" as one longer digit run
    ("room 12 (555) 123-4567", "room 12 (555) 123-4567", "room 12 <PHONE>"),
    # AWS temporary (STS) key ids and GitHub fine-grained tokens are not in its list
    (f"aws {AWS_TEMPORARY_KEY_ID} temporary", f"aws {AWS_TEMPORARY_KEY_ID} temporary", "aws <SECRET> temporary"),
    (f"token {GITHUB_FINE_GRAINED_TOKEN} leaked", f"token {GITHUB_FINE_GRAINED_TOKEN} leaked", "token <SECRET> leaked"),
]


@pytest.mark.parametrize("text, faultgate, ours", FAULTGATE_0_4_1_LEAKS)
def test_where_faultgate_0_4_1_lets_a_value_through_ours_masks_it(text: str, faultgate: str, ours: str) -> None:
    assert faultgate == text
    assert redact(text) == ours


# --- the redactor API -------------------------------------------------------------------

def test_builtin_is_a_named_callable_redactor() -> None:
    assert isinstance(redact, Redactor)
    assert redact.name == "builtin"
    assert redact("mail jane.doe@example.com") == "mail <EMAIL>"


def test_off_masks_nothing() -> None:
    assert off().name == "off"
    assert off()(MIXED) == MIXED


def test_get_redactor_returns_the_redactor_of_each_allowed_name() -> None:
    assert NAMES == ("builtin", "off")
    assert get_redactor("builtin").name == "builtin"
    assert get_redactor("off").name == "off"


def test_get_redactor_rejects_an_unknown_name_and_lists_the_allowed_ones() -> None:
    with pytest.raises(ValueError, match=re.escape("'presidio'") + ".*builtin, off"):
        get_redactor("presidio")


# --- safe_key ----------------------------------------------------------------------------

def test_a_scenario_key_with_nothing_to_mask_is_written_unchanged() -> None:
    assert safe_key("checkout-happy-path", redact) == "checkout-happy-path"


def test_a_masked_scenario_key_carries_a_short_hash_of_the_raw_key_as_faultgate_writes_it() -> None:
    # values recorded from faultgate 0.4.1's safe_key with its builtin redactor
    assert safe_key("refund for jane.doe@example.com", redact) == "refund for <EMAIL>#885abcbc"
    assert safe_key("refund for john.roe@example.com", redact) == "refund for <EMAIL>#27332b17"
    assert safe_key("call 555-123-4567 back", redact) == "call <PHONE> back#517dd198"


def test_two_keys_that_mask_alike_stay_apart_and_one_key_always_maps_to_the_same_output() -> None:
    jane, john = "refund for jane.doe@example.com", "refund for john.roe@example.com"
    assert safe_key(jane, redact) != safe_key(john, redact)
    assert safe_key(jane, redact) == safe_key(jane, builtin())


def test_a_scenario_key_is_written_raw_when_redaction_is_off() -> None:
    key = "refund for jane.doe@example.com"
    assert safe_key(key, None) == key
    assert safe_key(key, off()) == key
