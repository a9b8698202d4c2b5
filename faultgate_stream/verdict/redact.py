"""Mask personal data and secrets in every verdict reason that leaves the process.

Contract
--------
Checks see raw values. A policy check has to compare the real customer id, a loop
check the real tool arguments; masking before the checks would change what they
decide. So the assembled run stays raw in memory, and masking happens at the edge:
every reason and scenario key is passed through a ``Redactor`` by the sink that
writes it (the report, the log, span attributes, the verdict stream). Nothing a
sink writes has skipped the redactor.

``builtin`` masks, each as a tag in angle brackets:

* ``<SECRET>``: JSON Web Tokens (``eyJ...x.y.z``), the token after ``Bearer ``, and
  API keys by their vendor prefixes: OpenAI / Anthropic style ``sk-`` ``pk-`` ``rk-``,
  Stripe ``sk_live_`` / ``rk_test_``, AWS ``AKIA`` / ``ASIA``, GitHub ``ghp_`` (and
  ``gho_`` ``ghu_`` ``ghs_`` ``ghr_`` ``github_pat_``), Slack ``xox*-`` / ``xapp-``,
  Google ``AIza`` / ``ya29.``, SendGrid ``SG.``, Hugging Face ``hf_``;
* ``<EMAIL>``;
* ``<US_SSN>``: ``123-45-6789`` shapes outside the never-issued ranges;
* ``<CREDIT_CARD>``: every Luhn-valid window of 13-19 digits made of whole digit
  groups, so a card written next to an order number still goes;
* ``<IP_ADDRESS>``: IPv4, and IPv6 in full or ``::``-compressed form;
* ``<PHONE>``: a separated number group of 9-15 digits, or ``+`` and 9-15 digits.

The tags, the order and the results on ordinary text are those of faultgate 0.4.1's
``--redact builtin``, so a report from either tool can be compared line by line.
The differences are all places where faultgate lets a value through and this module
masks it: a card followed by an amount or a digit-led word; an IPv4 address or a
phone number that ends a sentence; a compressed IPv6 address; a phone written
``+15551234567``; a phone led by ``+`` or ``(`` that follows another number; AWS
``ASIA`` keys and GitHub ``github_pat_`` tokens. Masking a masked text again changes
nothing, as long as the values in it are set apart by whitespace or punctuation.

``off`` masks nothing; ``safe_key`` turns a scenario key into one fit to write out.

Cost: an agent can write anything into a span, and a verdict reason quotes it, so
every pattern starts only at a token boundary and every repetition is bounded: the
worst case is linear in the input. A regex scan of a short reason costs more than
parsing a whole span, so each pattern has a plain substring test in front of it,
and most reasons never reach a regex at all.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import NamedTuple

from faultgate_stream.model.reason import CLOSE, OPEN, Reason

__all__ = ["NAMES", "Redactor", "builtin", "get_redactor", "off", "safe_key"]

NAMES = ("builtin", "off")


# Not a dataclass: ``check`` runs without importing ``dataclasses`` (tests/cli/test_startup.py).
class Redactor(NamedTuple):
    """A named ``str -> str`` mask. Empty text is returned as is."""

    name: str
    mask: Callable[[str], str]

    def __call__(self, text: str) -> str:
        if not text:
            return text
        if isinstance(text, Reason):
            return _mask_then_cut(text, self.mask)
        return self.mask(text)


# --- reasons that quote a value cut short -----------------------------------------------

_MARKED = re.compile(OPEN + "([^" + OPEN + CLOSE + "]*)" + CLOSE)
TAGS = ("<SECRET>", "<EMAIL>", "<US_SSN>", "<CREDIT_CARD>", "<IP_ADDRESS>", "<PHONE>")


def _cut(text: str, limit: int) -> str:
    """``text[:limit]``, but a tag the cut would split is kept whole."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    start = head.rfind("<")
    if start != -1 and ">" not in head[start:]:
        for tag in TAGS:
            if text.startswith(tag, start):
                return text[:start + len(tag)]
    return head


def _mask_then_cut(r: Reason, mask: Callable[[str], str]) -> str:
    """Mask the reason with every quoted value whole, then cut each value to its limit:
    cutting first would hand the mask half a secret, which no pattern recognises."""
    masked = mask(r.marked())
    limits = iter(r.limits)
    out = _MARKED.sub(lambda m: _cut(m.group(1), next(limits, len(m.group(1)))), masked)
    return out.replace(OPEN, "").replace(CLOSE, "")


# --- kinds that need more than a regex to decide -------------------------------------

# Luhn's doubled digit, with the digits of the product already summed.
_DOUBLED = (0, 2, 4, 6, 8, 1, 3, 5, 7, 9)
_DIGIT_RUN = re.compile(r"\d+")


def _luhn_ok(digits: str) -> bool:
    total = 0
    for position, ch in enumerate(reversed(digits)):
        d = int(ch)
        total += _DOUBLED[d] if position & 1 else d
    return total % 10 == 0


def _longest_card_from(groups: list[str], first: int) -> int:
    """One past the last group of the longest card that starts at ``groups[first]``, or 0.

    A card is whole groups only: masking half a group would leave digits of the card
    standing next to the tag.
    """
    digits, found = "", 0
    for last in range(first, len(groups)):
        digits += groups[last]
        if len(digits) > 19:
            break
        if len(digits) >= 13 and _luhn_ok(digits):
            found = last + 1
    return found


def _mask_cards(match: re.Match[str], tag: str) -> str:
    """Mask each card inside a run of digit groups, keep the rest of the run.

    The run is often more than a card ("4111 1111 1111 1111 5555" with an order number
    after it); asking whether the whole run passes Luhn would let the card through.
    """
    run = match.group()
    spans = [(m.start(), m.end()) for m in _DIGIT_RUN.finditer(run)]
    groups = [run[a:b] for a, b in spans]
    pieces: list[str] = []
    kept_from = 0
    i = 0
    while i < len(groups):
        end = _longest_card_from(groups, i)
        if not end:
            i += 1
            continue
        pieces += (run[kept_from:spans[i][0]], tag)
        kept_from = spans[end - 1][1]
        i = end
    if not pieces:
        return run
    pieces.append(run[kept_from:])
    return "".join(pieces)


def _mask_phone(match: re.Match[str], tag: str) -> str:
    # the shape alone also fits short local numbers and ids; the digit count decides
    number = match.group()
    count = sum(ch.isdecimal() for ch in number)
    return tag if 9 <= count <= 15 else number


def _is_ipv6(text: str) -> bool:
    head, compressed, tail = text.partition("::")
    if compressed:
        groups = (head.split(":") if head else []) + (tail.split(":") if tail else [])
        if len(groups) > 7:
            return False
    else:
        groups = text.split(":")
        if len(groups) != 8:
            return False
    # an empty group means ":::" or a stray colon at an end: not an address
    if not all(1 <= len(g) <= 4 for g in groups):
        return False
    # A bare "1::2" or "a::b" is a Python slice far more often than an address; real
    # compressed addresses (fe80::1, 2001:db8::1) carry a four-digit group or three groups.
    return not compressed or len(groups) >= 3 or any(len(g) == 4 for g in groups)


def _mask_ipv6(match: re.Match[str], tag: str) -> str:
    candidate = match.group()
    if not _is_ipv6(candidate):
        return candidate
    if "::" in candidate:
        # A short compressed form glued to a number by "." or "-" ("555-123-4567:a::b",
        # "::ffff:192.0.2.1") is the tail of that number, or the head of an IPv4 address;
        # taking it would tear the number apart and leave its other digits standing.
        text, start, end = match.string, match.start(), match.end()
        if start and text[start - 1] in ".-":
            return candidate
        if text[end:end + 1] in (".", "-") and text[end + 1:end + 2].isalnum():
            return candidate
    return tag


# --- the rules ------------------------------------------------------------------------

_ANY_DIGIT = re.compile(r"\d")


def _count_digits(text: str) -> int:
    if text.isascii():
        # bytes.translate deletes by a byte table, several times faster than str's by dict
        return len(text) - len(text.encode("ascii").translate(None, b"0123456789"))
    # \d in the patterns matches every Unicode decimal digit, so the count must too
    return len(_ANY_DIGIT.findall(text))


# A gate answers "could the pattern match here?" from substring tests and the number of
# digits in the text as it was before any rule ran. Masking only removes digits, so that
# number stays an upper bound and a gate can never skip a real match. A False saves a
# regex scan, which costs more than parsing the span the text came from.
_Gate = Callable[[str, int], bool]


def _could_hold_vendor_key(text: str, digits: int) -> bool:
    # every vendor prefix carries one of "-", "_", "." or an "A"; testing those first
    # keeps ordinary prose to four substring tests
    if "-" in text and ("k-" in text or "xox" in text or "xapp-" in text):
        return True
    if "_" in text and ("k_" in text or "gh" in text or "hf_" in text):
        return True
    if "." in text and ("ya29." in text or "SG." in text):
        return True
    return "A" in text and ("AKIA" in text or "ASIA" in text or "AIza" in text)


class _Rule:
    """A kind of value, its pattern and the gate that says when the pattern could match.
    The pattern is compiled the first time a gate lets text through to it: a command that
    masks a few reasons compiles the patterns those reasons need, not all of them."""

    __slots__ = ("tag", "source", "could_match", "judge", "_pattern")

    def __init__(self, tag: str, source: str, could_match: _Gate,
                 judge: Callable[[re.Match[str], str], str] | None = None) -> None:
        self.tag, self.source, self.could_match, self.judge = tag, source, could_match, judge
        self._pattern: re.Pattern[str] | None = None

    @property
    def pattern(self) -> re.Pattern[str]:
        if self._pattern is None:
            self._pattern = re.compile(self.source)  # two threads racing here compile it twice, harmlessly
        return self._pattern

    def apply(self, text: str) -> str:
        tag = f"<{self.tag}>"
        if self.judge is None:
            # the tags hold no backslash, so a plain replacement string is safe
            return self.pattern.sub(tag, text)
        judge = self.judge
        return self.pattern.sub(lambda m: judge(m, tag), text)


_TOKEN = "[A-Za-z0-9_-]"

# Vendor formats as the vendors publish them. The lengths are bounds, not exact sizes,
# except where the vendor fixes the size (AWS, Google API keys).
_VENDOR_KEYS = (
    r"(?:sk|pk|rk)-" + _TOKEN + r"{16,300}",       # OpenAI, Anthropic (sk-ant-...), generic
    r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,256}",      # Stripe
    r"A(?:KIA|SIA)[0-9A-Z]{16}",                     # AWS access key id, long-lived and temporary
    r"gh[pousr]_[A-Za-z0-9]{30,255}",                # GitHub classic and app tokens
    r"github_pat_[A-Za-z0-9_]{22,255}",              # GitHub fine-grained token
    r"xox[abposre]-[A-Za-z0-9-]{10,255}",            # Slack bot / user / legacy tokens
    r"xapp-[A-Za-z0-9-]{10,255}",                    # Slack app-level token
    r"AIza[0-9A-Za-z_-]{35}",                        # Google API key
    r"ya29\.[0-9A-Za-z_-]{20,2048}",                 # Google OAuth access token
    r"SG\." + _TOKEN + r"{16,64}\." + _TOKEN + r"{16,128}",   # SendGrid
    r"hf_[A-Za-z0-9]{30,64}",                        # Hugging Face
)

_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"

# Order matters. Secrets go first: a key can hold digit runs a later rule would tear
# apart. SSNs go before cards, so an SSN written beside a card is not read as more card
# digits. Cards go before the looser IP and phone shapes, and IPv4 before IPv6, so the
# IPv4 tail of "::ffff:192.0.2.1" is already masked when the IPv6 rule looks at it.
def _keep_name(match: re.Match[str], tag: str) -> str:
    # "aws_secret_access_key = <SECRET>": the key's name stays, so the reason still reads
    return match.group(1) + tag


def _mask_aws_secret(match: re.Match[str], tag: str) -> str:
    # 40 characters of AWS's alphabet with both cases, a digit and a "/" or "+": a git
    # hash (hex, one case) or a long word is not one
    v = match.group()
    if ("/" in v or "+" in v) and any(c.isupper() for c in v) and any(c.islower() for c in v) \
            and any(c.isdigit() for c in v):
        return tag
    return v


_RULES = (
    _Rule(
        "SECRET",
        # a PEM private key, whole or cut short; newlines may be written as "\n" (JSON)
        (r"-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY-----(?:[A-Za-z0-9+/=\s]|\\[nr]){0,16384}"
                   r"(?:-----END[A-Z0-9 ]{0,40} PRIVATE KEY-----)?"),
        lambda text, digits: "PRIVATE KEY-----" in text,
    ),
    _Rule(
        "SECRET",
        # an AWS secret access key after its name, in config, env or JSON shape
        (r"((?i:aws)?[_ .-]?(?i:secret)[_ .-]?(?i:access)?[_ .-]?(?i:key)[\"']?\s{0,4}[:=]\s{0,4}[\"']?)"
                   r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"),
        lambda text, digits: "ecret" in text or "ECRET" in text,
        _keep_name,
    ),
    _Rule(
        "SECRET",
        (r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"),
        lambda text, digits: digits > 0 and len(text) >= 40 and ("/" in text or "+" in text),
        _mask_aws_secret,
    ),
    _Rule(
        "SECRET",
        (r"(?<![\w.-])eyJ[A-Za-z0-9_-]{8,4096}\.[A-Za-z0-9_-]{8,4096}\.[A-Za-z0-9_-]{8,4096}"),
        lambda text, digits: "eyJ" in text,
    ),
    _Rule(
        "SECRET",
        # "Bearer" in any case; spelled out so the token class stays plain ASCII
        (r"(?<=[Bb][Ee][Aa][Rr][Ee][Rr] )[A-Za-z0-9._~+/-]{16,4096}={0,2}"),
        lambda text, digits: "bearer " in text.lower(),
    ),
    _Rule(
        "SECRET",
        (r"(?<![\w-])(?:" + "|".join(_VENDOR_KEYS) + r")(?![\w-])"),
        _could_hold_vendor_key,
    ),
    _Rule(
        "EMAIL",
        # letters of any script (RFC 6531): "josé@exämple.de", "用户@例子.广告"
        (
            r"(?<![\w.%+-])[\w.%+-]{1,64}"
            r"@[\w-]{1,63}(?:\.[\w-]{1,63}){0,8}\.[^\W\d_]{2,24}(?![\w-])"
        ),
        lambda text, digits: "@" in text,
    ),
    _Rule(
        "US_SSN",
        # area 000, 666 and 9xx, group 00 and serial 0000 are never issued
        (r"(?<!\w)(?!000|666|9)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?!\w)"),
        lambda text, digits: digits >= 9 and "-" in text,
    ),
    _Rule(
        "CREDIT_CARD",
        # Up to 16 groups of 3-19 digits joined by one space or hyphen: 4-4-4-4, 4-6-5 and
        # unbroken all fit. The run may end before a sentence's full stop, not before a
        # decimal or a word; when its last group is such a one, the groups before it still
        # count, so a card followed by "1200.50" is not let through.
        (r"(?<![\w.])\d{3,19}(?:[ -]\d{3,19}){0,15}(?!\w)(?!\.\d)"),
        lambda text, digits: digits >= 13,
        _mask_cards,
    ),
    _Rule(
        "CREDIT_CARD",
        # written with dots, "4111.1111.1111.1111": groups of four, so a version or an
        # IPv4 address (groups of one to three) is not read as one
        (r"(?<![\w.])\d{4}(?:\.\d{4}){2,3}(?:\.\d{1,4})?(?![\w]|\.\d)"),
        lambda text, digits: digits >= 13 and "." in text,
        _mask_cards,
    ),
    _Rule(
        "IP_ADDRESS",
        # not part of a longer dotted run (a version, an OID); a full stop that ends a sentence may follow
        (r"(?<![\w.])(?:" + _OCTET + r"\.){3}" + _OCTET + r"(?!\w)(?!\.\w)"),
        lambda text, digits: digits >= 4 and text.count(".") >= 3,
    ),
    _Rule(
        "IP_ADDRESS",
        # a whole run of hex digits and colons, at most an address long; _is_ipv6 decides
        (r"(?<![\w:])[0-9A-Fa-f:]{2,39}(?![\w:])"),
        lambda text, digits: "::" in text or text.count(":") >= 7,
        _mask_ipv6,
    ),
    _Rule(
        "PHONE",
        # A phone is a whole number group, not one block of a longer run of digit blocks
        # (a card that failed Luhn, an id), hence the guards on both sides. A leading "+"
        # or "(" starts a new number whatever stands before it; guarding those too would
        # leave the second of two listed phones for a second pass to find.
        (
            r"(?:(?<![\w.+-])(?<!\d[ .-])(?=\d)|(?=[+(]))"
            r"(?:\+[1-9]\d{8,14}"
            r"|(?:\+\d{1,3}[ .-]?)?(?:\(\d{2,4}\)|\d{2,4})[ .-]\d{3,4}[ .-]?\d{3,4})"
            r"(?![.-]?\w)(?! \d)"
        ),
        lambda text, digits: digits >= 9,
        _mask_phone,
    ),
)


# The gates above that do not count digits, as one scan: a superset of their substring
# tests, so a text it does not find passes none of them. Most reasons ("answered", "24 calls
# within policy", "expected 'Ferro-5454' found in answer") have fewer than nine digits and
# are settled by it and two counts, without thirteen gate calls (they were most of a
# report's masking).
_WITHOUT_COUNTS = (
    "PRIVATE KEY-----", "ecret", "ECRET", "eyJ", "[Bb][Ee][Aa][Rr][Ee][Rr] ",   # PEM, AWS by name, JWT, Bearer
    "k-", "xox", "xapp-", "k_", "hf_", r"ya29\.", r"SG\.", "AKIA", "ASIA", "AIza",  # vendor keys but GitHub's
    "@", "::", "[/+]",                                                          # email, IPv6, 40-char secret
)
# The lookahead names every alternative's first character: re then tries the alternation
# only where one stands, several times faster than at every position.
_MAYBE_FEW_DIGITS = re.compile("(?=[PEeBbkxhyAS@:/+])(?:" + "|".join(_WITHOUT_COUNTS) + ")")


def _no_gate_opens(text: str, digits: int) -> bool:
    # nine digits open the SSN, card and phone gates; four and three dots the IPv4 one
    if digits >= 9 or (digits >= 4 and text.count(".") >= 3) or text.count(":") >= 7:
        return False
    if "gh" in text and "_" in text:
        return False
    return _MAYBE_FEW_DIGITS.search(text) is None


def _mask_builtin(text: str) -> str:
    digits = _count_digits(text)
    if _no_gate_opens(text, digits):
        return text
    for rule in _RULES:
        if rule.could_match(text, digits):
            text = rule.apply(text)
    return text


def _unchanged(text: str) -> str:
    return text


_BUILTIN = Redactor("builtin", _mask_builtin)
_OFF = Redactor("off", _unchanged)


def builtin() -> Redactor:
    """Stdlib regexes and checksums: no model, no download, no network."""
    return _BUILTIN


def off() -> Redactor:
    """Masks nothing. For local debugging, where the raw reason is the point."""
    return _OFF


def get_redactor(spec: str) -> Redactor:
    if spec == "builtin":
        return builtin()
    if spec == "off":
        return off()
    raise ValueError(f"unknown redaction {spec!r}; use one of: {', '.join(NAMES)}")


def safe_key(key: str, redactor: Callable[[str], str] | None) -> str:
    """A scenario key fit to write out.

    Unchanged when the redactor finds nothing to mask. Otherwise the masked key plus
    ``#`` and 8 hex digits of the raw key's SHA-256: two keys that mask alike (two
    customers' emails) stay apart in a report, and one raw key reads the same in every
    run, so runs can still be grouped by scenario without the value being written.
    """
    if redactor is None:
        return key
    masked = redactor(key)
    if masked == key:
        return key
    # surrogatepass: a key read from OTLP/JSON may hold a lone surrogate (a ``\\ud800`` escape)
    return f"{masked}#{hashlib.sha256(key.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"
