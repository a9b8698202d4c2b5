"""Data moves one way: no stage imports a later one (DESIGN.md, Data flow)."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "faultgate_stream"
# Stages in pipeline order; a module may import its own stage and earlier ones only.
# ``read`` comes before ``receive`` because receivers decode with the readers (as the
# collector's receivers unmarshal with pdata). ``cli`` and the wiring modules sit after
# every stage.
ORDER = ["model", "read", "receive", "assemble", "checks", "verdict", "judge", "sessions", "export", "gate", "cli"]
WIRING = {"pipeline", "testing", "service", "config"}


def _stage(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "faultgate_stream" or len(parts) < 2:
        return None
    return parts[1]


def test_no_module_imports_a_later_stage():
    backward = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        own = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        if own in WIRING or own not in ORDER:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for n in names:
                target = _stage(n)
                if target in WIRING and own != "cli":
                    backward.append(f"{rel} imports {n}")
                elif target in ORDER and ORDER.index(target) > ORDER.index(own):
                    backward.append(f"{rel} imports {n}")
    assert backward == []


def test_every_stage_folder_is_a_known_stage():
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith("__")}
    assert folders <= set(ORDER), folders - set(ORDER)
