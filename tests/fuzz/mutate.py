"""Cheap mutants of a generated document, for the soak.

Hypothesis spends most of a soak's time building documents; the readers spend little on
each. So every document hypothesis builds seeds many mutants: one place in the JSON tree
(any depth, chosen uniformly) gets a hostile value, loses its key, is duplicated or is
wrapped; protobuf bodies get bytes flipped, cut or repeated. Mutants are reproducible from
``(seed, index)``: the soak names them when one finds a bug.
"""
from __future__ import annotations

import copy
import random

HOSTILE = [
    None, True, False, 0, -1, 2**63, -(2**63) - 1, 10**400, 1e308, float("inf"), float("-inf"), float("nan"),
    "", " ", "null", "0", "-1", "9" * 5000, "x" * 70_000, "\udcff", "\x00", "é" * 10, "[" * 3000, '{"a":' * 3000,
    "tool_call", "invoke_agent", "execute_tool", "chat", "[]", "{}", "{\"parts\": 1}",
    [], {}, [None], [[[]]], {"": None}, {"stringValue": 1}, {"intValue": "x"}, {"arrayValue": {"values": 3}},
    {"kvlistValue": {"values": [{"key": 1}]}}, {"bytesValue": "!!not base64"}, {"doubleValue": "NaN"},
]


def _places(doc, limit: int = 4000) -> list[tuple[object, object]]:
    """(container, key) for every value in the tree, breadth first, at most ``limit``."""
    out: list[tuple[object, object]] = []
    todo = [doc]
    while todo and len(out) < limit:
        node = todo.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for k, v in items:
            out.append((node, k))
            if isinstance(v, (dict, list)):
                todo.append(v)
    return out


def mutant(doc, rng: random.Random):
    """A copy of ``doc`` with one place changed (the document itself when it has none)."""
    doc = copy.deepcopy(doc)
    places = _places(doc)
    if not places:
        return rng.choice(HOSTILE)
    container, key = rng.choice(places)
    op = rng.randrange(6)
    if op <= 2:
        container[key] = copy.deepcopy(rng.choice(HOSTILE))
    elif op == 3:
        del container[key]
    elif op == 4 and isinstance(container, list):
        container.insert(key, copy.deepcopy(container[key]))
    elif op == 4:
        container[str(rng.choice(HOSTILE))[:40]] = copy.deepcopy(container[key])
    else:
        container[key] = [container[key]] if rng.random() < 0.5 else {"value": container[key]}
    return doc


def byte_mutant(body: bytes, rng: random.Random) -> bytes:
    """``body`` with bytes flipped, cut short, or a slice repeated: what a broken proxy sends."""
    if not body:
        return bytes([rng.randrange(256)])
    data = bytearray(body)
    op = rng.randrange(3)
    if op == 0:
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif op == 1:
        del data[rng.randrange(len(data)):]
    else:
        i = rng.randrange(len(data))
        data[i:i] = data[i:i + rng.randint(1, 64)] * rng.randint(1, 8)
    return bytes(data)
