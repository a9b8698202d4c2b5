"""How a trace file wraps its documents: compression, one JSON value or many, one protobuf
message or a length-prefixed stream of them. ``files`` reads what is inside with the format
readers; this module only finds the documents.

The shapes are the ones tools write:

- gzip (``1f 8b``): any of the below, compressed (``gzip traces.jsonl``). zstd (the
  collector file exporter's ``compression: zstd``) is recognised and refused with what to
  run instead, since no zstd decoder is a dependency;
- JSON Lines: one JSON value per line, as the collector's file exporter writes with
  ``format: json`` (one export request per line); also JSON values written one after the
  other, as the OTel SDK's ``ConsoleSpanExporter`` prints pretty ``to_json()`` spans;
- length-prefixed protobuf: each message preceded by its size as a 4-byte big-endian
  unsigned integer, as the file exporter writes with ``format: proto``.
"""
from __future__ import annotations

import json
import struct
from typing import Any

from faultgate_stream.model.errors import InputError
from faultgate_stream.read import payload

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_PREFIX = struct.Struct(">I")


def decompress(data: bytes) -> tuple[bytes, str]:
    """(the file's bytes, uncompressed; "gzip" or ""). Raises ``InputError``."""
    if data[:2] == GZIP_MAGIC:
        import gzip  # with zlib, only for compressed files: `check` on plain JSON starts without them
        import zlib

        try:
            return gzip.decompress(data), "gzip"
        except (OSError, EOFError, zlib.error) as e:
            raise InputError(f"not a valid gzip file ({e})") from None
    if data[:4] == ZSTD_MAGIC:
        raise InputError("zstd-compressed (the file exporter's compression: zstd); "
                         "decompress it first: zstd -d FILE")
    return data, ""


def json_values(text: bytes) -> list[Any] | None:
    """The JSON values of a JSON Lines (or concatenated JSON) text; None when the text is
    one value or not JSON at all (the caller's single-document parse says which)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) > 1:
        try:
            return [payload.loads(ln) for ln in lines]
        except ValueError:
            pass
    # values that span lines (pretty-printed), written one after another
    try:
        s = text.decode("utf-8")
    except UnicodeDecodeError:
        return None
    decoder = json.JSONDecoder()
    out: list[Any] = []
    i, n = 0, len(s)
    while True:
        while i < n and s[i].isspace():
            i += 1
        if i >= n:
            break
        try:
            value, i = decoder.raw_decode(s, i)
        except ValueError:
            return None
        out.append(value)
    return out if len(out) > 1 else None


def length_prefixed(data: bytes) -> list[bytes] | None:
    """The messages of a length-prefixed protobuf stream; None unless the prefixes chain
    exactly to the end of the data (a single serialised message almost never does: its
    first byte is a field tag, which read as a length points far past the end)."""
    out: list[bytes] = []
    i, n = 0, len(data)
    while i < n:
        if n - i < _PREFIX.size:
            return None
        (size,) = _PREFIX.unpack_from(data, i)
        i += _PREFIX.size
        if size > n - i:
            return None
        out.append(data[i:i + size])
        i += size
    return out or None
