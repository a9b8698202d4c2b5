"""The service's one YAML file: loaded, overridden from the environment, validated whole.

Each stage declares its settings as a frozen dataclass in its own ``config.py``; this
module walks those declarations, so an unknown key is found from the declared fields, not
from a list kept here. Every problem is reported at once, each prefixed with its path
(``assemble.root_grace: ...``), as the collector's ``confmap`` does.

Environment overrides: ``FAULTGATE_STREAM__<SECTION>__<KEY>=value``, e.g.
``FAULTGATE_STREAM__ASSEMBLE__ROOT_GRACE=5s``; the value is read as a YAML scalar.
"""
from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml

from faultgate_stream.assemble.config import AssembleConfig
from faultgate_stream.checks.config import ChecksConfig
from faultgate_stream.export.log.config import LogConfig
from faultgate_stream.export.metrics.config import MetricsConfig
from faultgate_stream.export.query.config import QueryConfig
from faultgate_stream.export.spans.config import SpansExportConfig
from faultgate_stream.export.stream.config import StreamConfig
from faultgate_stream.gate.config import GateConfig
from faultgate_stream.judge.config import JudgeConfig
from faultgate_stream.model.settings import BYTES, DURATION
from faultgate_stream.receive.config import ReceiveConfig
from faultgate_stream.receive.wal.config import DurabilityConfig
from faultgate_stream.sessions.config import SessionsConfig
from faultgate_stream.verdict.config import AmendConfig

ENV_PREFIX = "FAULTGATE_STREAM__"
# The completion scan runs at each run's deadline and at least this often; ingestion also
# runs it when a deadline has passed or a tick is overdue, so a busy receiver cannot starve
# it (contrib PR #48699: a starved ticker made memory climb).
DEFAULT_TICK = 0.1
# SIGTERM to exit: time to flush the export queue. Kubernetes gives 30 s by default; keep
# room for the process to stop after the flush.
DEFAULT_SHUTDOWN_GRACE = 20.0


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServiceConfig:
    receive: ReceiveConfig = ReceiveConfig()
    assemble: AssembleConfig = AssembleConfig()
    checks: ChecksConfig = ChecksConfig()
    metrics: MetricsConfig = MetricsConfig()
    export: SpansExportConfig = SpansExportConfig()
    stream: StreamConfig = StreamConfig()
    log: LogConfig = LogConfig()
    gate: GateConfig = GateConfig()
    amend: AmendConfig = AmendConfig()
    judge: JudgeConfig = JudgeConfig()
    sessions: SessionsConfig = SessionsConfig()
    query: QueryConfig = QueryConfig()
    durability: DurabilityConfig = DurabilityConfig()
    tick: float = dataclasses.field(default=DEFAULT_TICK, metadata=DURATION)
    shutdown_grace: float = dataclasses.field(default=DEFAULT_SHUTDOWN_GRACE, metadata=DURATION)

    def validate(self) -> list[str]:
        problems = []
        if self.judge.spec and not self.amend.enabled:
            problems.append("judge.spec: a live judge needs amend.enabled: true (its answers arrive as amended verdicts)")
        if "drifted" in self.judge.when and not (self.gate.bands and self.gate.drift.enabled):
            problems.append("judge.when: drifted needs gate.bands (with gate.drift.enabled): drift is judged against a band")
        wal = self.durability.wal
        if wal.enabled and wal.max_bytes < 2 * self.receive.max_request_bytes:
            problems.append(f"durability.wal.max_bytes: must hold two of the largest requests "
                            f"(2 x receive.max_request_bytes = {2 * self.receive.max_request_bytes})")
        return problems


class ConfigError(ValueError):
    def __init__(self, problems: list[str]) -> None:
        super().__init__("invalid configuration:\n  " + "\n  ".join(problems))
        self.problems = problems


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}
_SIZE = re.compile(r"^\s*(\d+)\s*(B|KiB|MiB|GiB|KB|MB|GB)?\s*$")
_SIZES = {None: 1, "B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "KB": 1000, "MB": 1000**2, "GB": 1000**3}


def _duration(v: Any) -> float:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    m = _DURATION.match(str(v))
    if not m:
        raise ValueError(f"must be a duration like 2s, 500ms or 10m, not {v!r}")
    return float(m.group(1)) * _UNITS[m.group(2)]


def _bytes(v: Any) -> int:
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    m = _SIZE.match(str(v))
    if not m:
        raise ValueError(f"must be a size like 64MiB or a number of bytes, not {v!r}")
    return int(m.group(1)) * _SIZES[m.group(2)]


def _coerce(value: Any, tp: Any, meta: Mapping[str, Any]) -> Any:
    if meta is DURATION or meta.get("kind") == "duration":
        return _duration(value)
    if meta is BYTES or meta.get("kind") == "bytes":
        return _bytes(value)
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None:
            return None
        return _coerce(value, args[0], meta)
    if origin is Literal:
        allowed = typing.get_args(tp)
        if value not in allowed:
            raise ValueError(f"must be one of {', '.join(map(repr, allowed))}, not {value!r}")
        return value
    if origin is dict:
        if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            raise ValueError("must be a mapping of strings to strings")
        return dict(value)
    if origin is tuple:
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise ValueError("must be a list of strings")
        return tuple(value)
    if tp is bool:
        if not isinstance(value, bool):
            raise ValueError(f"must be true or false, not {value!r}")
        return value
    if tp is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"must be a whole number, not {value!r}")
        return value
    if tp is float:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ValueError(f"must be a number, not {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ValueError(f"must be a string, not {value!r}")
        return value
    raise ValueError(f"unsupported setting type {tp!r}")


def _dataclass_items(tp: Any) -> type | None:
    """The item type of a ``tuple[SomeConfig, ...]`` setting, else None."""
    if typing.get_origin(tp) is tuple:
        args = [a for a in typing.get_args(tp) if a is not Ellipsis]
        if len(args) == 1 and dataclasses.is_dataclass(args[0]):
            return args[0]
    return None


def _build(cls: type, raw: Any, path: str, problems: list[str]) -> Any:
    prefix = f"{path}." if path else ""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        problems.append(f"{path or 'config'}: must be a mapping")
        return cls()
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in raw:
        if key not in fields:
            problems.append(f"{prefix}{key}: unknown key; known: {', '.join(fields)}")
    values: dict[str, Any] = {}
    for name, f in fields.items():
        if name not in raw:
            continue
        tp = hints[name]
        if dataclasses.is_dataclass(tp):
            values[name] = _build(tp, raw[name], f"{prefix}{name}", problems)
            continue
        item = _dataclass_items(tp)
        if item is not None:
            if not isinstance(raw[name], list):
                problems.append(f"{prefix}{name}: must be a list")
                continue
            values[name] = tuple(_build(item, x, f"{prefix}{name}[{i}]", problems) for i, x in enumerate(raw[name]))
            continue
        try:
            values[name] = _coerce(raw[name], tp, f.metadata)
        except ValueError as e:
            problems.append(f"{prefix}{name}: {e}")
    obj = cls(**values)
    validate = getattr(obj, "validate", None)
    if validate is not None:
        problems += [f"{prefix}{p}" for p in validate()]
    return obj


def _apply_env(raw: dict[str, Any], env: Mapping[str, str]) -> None:
    for key, value in env.items():
        if not key.startswith(ENV_PREFIX):
            continue
        path = key[len(ENV_PREFIX):].lower().split("__")
        node = raw
        for part in path[:-1]:
            node = node.setdefault(part, {}) if isinstance(node.get(part, {}), dict) else {}
        node[path[-1]] = yaml.safe_load(value)


def load(path: str | Path | None = None, env: Mapping[str, str] | None = None) -> ServiceConfig:
    """The validated config. Raises ``ConfigError`` listing every problem with its path."""
    raw: Any = {}
    if path is not None:
        try:
            raw = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        except OSError as e:
            raise ConfigError([f"{path}: cannot read ({e.strerror or e})"]) from None
        except yaml.YAMLError as e:
            raise ConfigError([f"{path}: not valid YAML ({e})"]) from None
    if not isinstance(raw, dict):
        raise ConfigError([f"{path}: the top level must be a mapping"])
    _apply_env(raw, env or {})
    problems: list[str] = []
    cfg = _build(ServiceConfig, raw, "", problems)
    if problems:
        raise ConfigError(problems)
    return cfg
