"""``Content-Encoding`` undone by us, not by aiohttp, so that every failure is ours to
answer: a body that does not inflate is a 400 naming the encoding, an encoding we do not
read is a 415 (aiohttp would answer those with its own 400 and a logged traceback, or,
for an encoding it does not know, pass the compressed bytes on as if they were plain),
and the size limit is counted on the inflated bytes, so a small gzip bomb cannot fill
memory: inflating stops one byte past the limit.
"""
from __future__ import annotations

import zlib

from faultgate_stream.model.errors import InputError
from faultgate_stream.receive.decode import PayloadTooLarge

# The OTLP spec asks for gzip; deflate costs nothing more. "" and identity: as sent.
ENCODINGS = ("", "identity", "gzip", "deflate")


class UnsupportedEncoding(InputError):
    """An encoding we do not read: 415, permanent."""


def inflate(body: bytes, encoding: str, limit: int) -> bytes:
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        if len(body) > limit:
            raise PayloadTooLarge(f"request is over the {limit}-byte limit")
        return body
    if encoding == "gzip":
        wbits = 16 + zlib.MAX_WBITS
    elif encoding == "deflate":
        # RFC 9110's deflate is the zlib format; some clients send raw deflate, so the
        # header decides (a zlib stream opens with 0x78)
        wbits = zlib.MAX_WBITS if body[:1] == b"\x78" else -zlib.MAX_WBITS
    else:
        raise UnsupportedEncoding(f"unsupported Content-Encoding {encoding!r}; send gzip, deflate or identity")
    d = zlib.decompressobj(wbits)
    try:
        out = d.decompress(body, limit + 1)
    except zlib.error as e:
        raise InputError(f"body does not decompress as {encoding} ({e})") from None
    if len(out) > limit:
        raise PayloadTooLarge(f"request is over the {limit}-byte limit (after decompression)")
    if not d.eof:
        raise InputError(f"body does not decompress as {encoding} (the compressed stream is cut short)")
    if d.unused_data.strip(b"\0"):
        raise InputError(f"body does not decompress as {encoding} ({len(d.unused_data)} bytes after the stream)")
    return out
