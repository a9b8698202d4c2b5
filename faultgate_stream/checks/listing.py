"""What ``faultgate-stream checks`` lists: every check, with where it comes from and its version.

Built-ins first, in report order, then the trajectory checks a spec adds, then every plug-in
an installed package declares (``faultgate_stream.checks`` entry points: available by name,
run only when named), then those named on the command line and the rules of a rules file.
"""
from __future__ import annotations

from faultgate_stream import __version__
from faultgate_stream.model.errors import InputError

Row = tuple[str, str, str, str, str, str]  # name, kind, severity, origin, version, description


def rows(plugins: list[str] | tuple[str, ...] = (), rules: str = "") -> list[Row]:
    from faultgate_stream.checks.plugins.load import installed, load
    from faultgate_stream.checks.registry import ALL
    from faultgate_stream.checks.trajectory import CHECKS as TRAJECTORY

    out: list[Row] = [(c.name, c.kind, c.severity.value, "built-in", __version__, c.description)
                      for c in (*ALL, *TRAJECTORY)]
    eps = installed()
    named = set()
    for spec in [*sorted(eps), *plugins]:
        try:
            c = load(spec, eps)
        except InputError as e:
            if spec in plugins:
                raise  # named on the command line: the user asked for it
            # an installed package's broken plug-in is listed, not fatal to the listing
            dist = eps[spec].dist
            out.append((spec, "plugin", "-", f"{dist.name if dist else '?'} (entry point {spec})",
                        dist.version if dist else "-", f"cannot load: {e}"))
            continue
        if c.name in named:
            continue
        named.add(c.name)
        o = c.origin
        origin = f"{o.package} ({o.source})" if o.package else o.source
        out.append((c.name, c.kind, c.severity.value, origin, c.version, _line(c.description)))
    if rules:
        from faultgate_stream.checks.base import each
        from faultgate_stream.checks.rules.check import rule_checks
        from faultgate_stream.checks.rules.load import load_rules

        file = load_rules(rules)
        for c in each(rule_checks(file)):
            out.append((c.name, c.kind, c.severity.value, f"rules {rules}", file.digest, _line(c.description)))
    return out


def _line(text: str) -> str:
    return " ".join((text or "").split())
