"""Entry point: one subcommand per verb; each module owns its arguments and its run.

A subcommand's module is imported only when that subcommand runs: ``check`` should not
pay for the service's gRPC, aiohttp and protobuf imports (measured: 164 ms of imports
for every command when all were loaded eagerly, about the whole of faultgate's run).
"""
from __future__ import annotations

import argparse
import importlib
import sys

from faultgate_stream import __version__
from faultgate_stream.cli.terminal import guard_stdout

# name -> (module, help)
COMMANDS = {
    "check": ("faultgate_stream.cli.check", "run checks over trace files"),
    "baseline": ("faultgate_stream.cli.baseline", "measure run-to-run noise: a tolerance band from baseline runs"),
    "precheck": ("faultgate_stream.cli.precheck", "validate a trace file before checking it"),
    "serve": ("faultgate_stream.cli.serve", "run the live service: OTLP in, verdicts out"),
    "replay": ("faultgate_stream.cli.replay", "send trace files to a running service over OTLP"),
    "cluster": ("faultgate_stream.cli.cluster", "the one-host layout: N serve replicas behind a load-balancing collector"),
    "demo": ("faultgate_stream.cli.demo", "the service on its defaults, with the bundled examples replayed into it"),
    "mcp": ("faultgate_stream.cli.mcp_server", "MCP tools over a running service's verdict API, on stdio"),
}


def _checks(args: argparse.Namespace) -> int:
    from faultgate_stream.checks.listing import rows
    from faultgate_stream.model.errors import InputError

    try:
        listed = rows(args.plugin, args.rules or "")
    except InputError as e:
        print(f"faultgate-stream: {e}", file=sys.stderr)
        return 2
    for name, kind, severity, origin, version, description in listed:
        print(f"{name:<24} {kind:<8} {severity:<5} {origin:<32} {version:<12} {description}")
    return 0


def _version(_: argparse.Namespace) -> int:
    print(f"faultgate-stream {__version__}")
    return 0


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; only the subcommand named in ``argv`` (all of them when ``argv`` is
    None) gets its full arguments, so only its module is imported."""
    p = argparse.ArgumentParser(prog="faultgate-stream",
                                description="Check AI-agent runs for known failure modes, from files or a live OTLP stream.")
    p.add_argument("--version", action="version", version=f"faultgate-stream {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)
    chosen = next((a for a in argv if not a.startswith("-")), None) if argv is not None else None
    for name, (module_name, help_text) in COMMANDS.items():
        sp = sub.add_parser(name, help=help_text)
        if chosen is None or chosen == name:
            module = importlib.import_module(module_name)
            module.add_arguments(sp)
            sp.set_defaults(fn=module.run)
    listing = sub.add_parser("checks", help="list the checks with kind, severity, origin, version and description")
    listing.add_argument("--plugin", action="append", default=[], help="also a plug-in (module:Class; repeatable)")
    listing.add_argument("--rules", help="also the rules of this file")
    listing.set_defaults(fn=_checks)
    sub.add_parser("version", help="print the version").set_defaults(fn=_version)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # `check ... | head`: a reader that stops early ends the output, not the command
    stdout = sys.stdout
    guard_stdout()
    try:
        args = build_parser(argv).parse_args(argv)
        return args.fn(args)
    finally:
        sys.stdout = stdout


if __name__ == "__main__":
    sys.exit(main())
