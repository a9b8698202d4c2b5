"""Finding plug-ins: by entry-point name (installed packages declare theirs in the
``faultgate_stream.checks`` group) or as ``module:Class``, each checked against the API
before a run ever meets it.

Installed plug-ins are found, never run unasked: a package that declares an entry point
makes its check available by name (``faultgate-stream checks`` lists it), and
``checks.plugins``, ``check --plugin`` or a binding turns it on. Installing a package
therefore never changes which checks a service or a gate runs.
"""
from __future__ import annotations

import importlib
import os
import re
import sys
from importlib import metadata
from typing import Any

from faultgate_stream.checks import api
from faultgate_stream.checks.plugins.check import Origin, PluginCheck, plugin_check
from faultgate_stream.model.errors import InputError

GROUP = "faultgate_stream.checks"
NAME = re.compile(r"[a-z][a-z0-9_.\-]{0,63}")


def installed() -> dict[str, metadata.EntryPoint]:
    """Entry-point name -> entry point, for every installed package that declares one."""
    return {ep.name: ep for ep in metadata.entry_points(group=GROUP)}


def reserved_names() -> frozenset[str]:
    """Names a plug-in cannot take: every built-in check's."""
    from faultgate_stream.checks.registry import NAMES
    from faultgate_stream.checks.trajectory import CHECKS as TRAJECTORY

    return frozenset(NAMES) | {c.name for c in TRAJECTORY}


def load(spec: str, entry_points: dict[str, metadata.EntryPoint] | None = None) -> PluginCheck:
    """The plug-in ``spec`` names (an entry-point name, or ``module:Class``), built and
    checked. Raises ``InputError`` saying what is wrong and how to fix it."""
    spec = spec.strip()
    if ":" in spec:
        cls = _import(spec, spec)
        origin = _module_origin(spec)
    else:
        eps = installed() if entry_points is None else entry_points
        ep = eps.get(spec)
        if ep is None:
            known = ", ".join(sorted(eps)) or "none is installed"
            raise InputError(f"plug-in {spec!r}: no installed package declares it in the {GROUP!r} entry-point "
                             f"group ({known}); name one, or give module:Class")
        cls = _import(ep.value, spec)
        dist = ep.dist
        origin = Origin(f"entry point {spec}", dist.name if dist else "", dist.version if dist else "", ep.value)
    return build(cls, spec, origin)


def build(cls: Any, spec: str, origin: Origin) -> PluginCheck:
    """``cls`` instantiated and checked against the API."""
    if not (isinstance(cls, type) and issubclass(cls, api.Check)):
        raise InputError(f"plug-in {spec!r}: {origin.target} is not a check (subclass "
                         f"faultgate_stream.checks.api.Check)")
    _api_version(cls, spec)
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise InputError(f"plug-in {spec!r}: name must be lower-case letters, digits and _.- (at most 64, "
                         f"a letter first), not {name!r}")
    if name in reserved_names():
        raise InputError(f"plug-in {spec!r}: the name {name!r} is a built-in check's; choose another")
    sev = cls.severity
    if not isinstance(sev, api.Severity) and sev not in ("hard", "soft", "warn"):
        raise InputError(f"plug-in {spec!r}: severity must be hard, soft or warn, not {sev!r}")
    attrs = cls.attributes
    if isinstance(attrs, str) or not all(isinstance(a, str) for a in attrs):
        raise InputError(f"plug-in {spec!r}: attributes must be a set of attribute names")
    reads = cls.reads
    if isinstance(reads, str) or not all(r in api.READS for r in reads):
        raise InputError(f"plug-in {spec!r}: reads must be a tuple of {', '.join(api.READS)}, not {reads!r}")
    try:
        plugin = cls()
    except Exception as e:
        raise InputError(f"plug-in {spec!r}: {origin.target}() raised {type(e).__name__}: {e}") from e
    return plugin_check(plugin, origin)


def _api_version(cls: type, spec: str) -> None:
    want = str(getattr(cls, "api_version", api.API_VERSION))
    try:
        major, minor = (int(x) for x in want.split(".", 1))
        have_major, have_minor = (int(x) for x in api.API_VERSION.split("."))
    except ValueError:
        raise InputError(f"plug-in {spec!r}: api_version must be \"major.minor\", not {want!r}") from None
    if major != have_major or minor > have_minor:
        raise InputError(f"plug-in {spec!r} was written for check API {want}; this faultgate-stream has "
                         f"{api.API_VERSION} (a plug-in loads on the same major version, minor {minor} or newer)")


def _import(target: str, spec: str) -> Any:
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise InputError(f"plug-in {spec!r}: give module:Class")
    try:
        module = _import_module(module_name)
    except Exception as e:
        raise InputError(f"plug-in {spec!r}: cannot import {module_name}: {type(e).__name__}: {e}") from e
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise InputError(f"plug-in {spec!r}: module {module_name} has no {attr}")
    return obj


def _import_module(name: str) -> Any:
    """The module, looked for on ``sys.path`` and then in the working directory, as
    ``python -m`` would find it (a console script's path starts at its own directory)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        cwd = os.getcwd()
        if e.name != name.split(".")[0] or cwd in sys.path or "" in sys.path:
            raise
        sys.path.append(cwd)
        return importlib.import_module(name)


def _module_origin(target: str) -> Origin:
    """A ``module:Class`` plug-in's package: the installed distribution its top-level
    module comes from, when there is one."""
    top = target.split(":")[0].split(".")[0]
    dists = metadata.packages_distributions().get(top, [])
    if dists:
        try:
            return Origin(target, dists[0], metadata.version(dists[0]), target)
        except metadata.PackageNotFoundError:
            pass
    return Origin(target, "", "", target)


def load_all(specs: tuple[str, ...] | list[str]) -> list[PluginCheck]:
    """Every plug-in ``specs`` names, each problem reported: the names must be unique."""
    eps = installed() if any(":" not in s for s in specs) else {}
    out, problems, seen = [], [], {}
    for i, spec in enumerate(specs):
        try:
            c = load(spec, eps)
        except InputError as e:
            problems.append(f"plugins[{i}]: {e}")
            continue
        if c.name in seen:
            problems.append(f"plugins[{i}]: plug-in {spec!r} is named {c.name!r}, as {seen[c.name]!r} is")
            continue
        seen[c.name] = spec
        out.append(c)
    if problems:
        raise InputError("\n".join(problems))
    return out
