"""Entry point: one subcommand per verb; each module owns its arguments and its run."""
from __future__ import annotations

import argparse
import sys

from faultgate_stream import __version__
from faultgate_stream.checks.registry import ALL
from faultgate_stream.cli import check, demo, precheck, replay, serve


def _checks(_: argparse.Namespace) -> int:
    for c in ALL:
        print(f"{c.name:<24} {c.kind:<8} {c.severity.value:<5} {c.description}")
    return 0


def _version(_: argparse.Namespace) -> int:
    print(f"faultgate-stream {__version__}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="faultgate-stream",
                                description="Check AI-agent runs for known failure modes, from files or a live OTLP stream.")
    p.add_argument("--version", action="version", version=f"faultgate-stream {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check", help="run checks over trace files")
    check.add_arguments(c)
    c.set_defaults(fn=check.run)
    pc = sub.add_parser("precheck", help="validate a trace file before checking it")
    precheck.add_arguments(pc)
    pc.set_defaults(fn=precheck.run)
    sv = sub.add_parser("serve", help="run the live service: OTLP in, verdicts out")
    serve.add_arguments(sv)
    sv.set_defaults(fn=serve.run)
    rp = sub.add_parser("replay", help="send trace files to a running service over OTLP")
    replay.add_arguments(rp)
    rp.set_defaults(fn=replay.run)
    dm = sub.add_parser("demo", help="the service on its defaults, with the bundled examples replayed into it")
    demo.add_arguments(dm)
    dm.set_defaults(fn=demo.run)
    sub.add_parser("checks", help="list the checks with kind, severity and description").set_defaults(fn=_checks)
    sub.add_parser("version", help="print the version").set_defaults(fn=_version)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
