"""Markers that stage configs put on fields whose values config files write with units."""
from __future__ import annotations

DURATION = {"kind": "duration"}  # seconds as a float; files may write "2s", "500ms", "10m", "1h"
BYTES = {"kind": "bytes"}        # bytes as an int; files may write "64MiB", "512KiB", "1GiB"
