"""``faultgate-stream serve [--config FILE]``: the live service until SIGTERM or SIGINT."""
from __future__ import annotations

import argparse
import dataclasses
import faulthandler
import os
import signal
import sys
import threading

from faultgate_stream.config import ENV_PREFIX, ConfigError, ServiceConfig, load
from faultgate_stream.model.errors import InputError

# seconds past shutdown_grace after which a shutdown still running dumps every stack
SHUTDOWN_STACKS_AFTER = 3.0

DESCRIPTION = """\
The live service: OTLP/gRPC and OTLP/HTTP in; Prometheus metrics, annotated spans
downstream, a verdict log and a verdict stream out.

Configuration: one YAML file (--config), every key optional; examples/config.yaml lists
every key with its default. The file is validated whole at start: each problem is
reported with its key path. Environment variables override the file, one per key:

  {prefix}<SECTION>__<KEY>=value        read as a YAML scalar, e.g.
  {prefix}ASSEMBLE__ROOT_GRACE=5s
  {prefix}RECEIVE__GRPC_ENDPOINT=127.0.0.1:4317
  {prefix}EXPORT__ENDPOINT=otel-collector:4317
  {prefix}SHUTDOWN_GRACE=30s           (top-level keys take no section)

Keys by section:
{keys}

Signals: SIGHUP re-reads the policy and spec files (runs in flight keep theirs);
SIGTERM/SIGINT refuse new data retryably, complete the runs in flight as `shutdown`,
flush the export queue within shutdown_grace and exit 0.
"""


def _keys() -> str:
    """The settable keys, read from the config dataclasses so the help cannot drift."""
    lines, top = [], []
    for f in dataclasses.fields(ServiceConfig):
        section = f.default if dataclasses.is_dataclass(f.default) else None
        if section is None:
            top.append(f.name)
            continue
        lines.append(f"  {f.name}: " + ", ".join(x.name for x in dataclasses.fields(section)))
    lines.append("  (top level): " + ", ".join(top))
    return "\n".join(lines)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.description = DESCRIPTION.format(prefix=ENV_PREFIX, keys=_keys())
    p.add_argument("--config", help="YAML config file (default: built-in defaults); "
                                    f"{ENV_PREFIX}SECTION__KEY environment variables override it")


def run(args: argparse.Namespace) -> int:
    from faultgate_stream.cli import heap, ports
    from faultgate_stream.cli.wait import until_set
    from faultgate_stream.service import Service, configure_logging

    try:
        config = load(args.config, os.environ)
    except ConfigError as e:
        print(f"faultgate-stream: {e}", file=sys.stderr)
        return 2
    taken = ports.busy(config)
    if taken:
        for line in taken:
            print(f"faultgate-stream: cannot start: {line}", file=sys.stderr)
        return 2
    configure_logging(config.log.level)
    # Handlers before start: /readyz answers 200 from inside start(), and a supervisor may
    # send SIGTERM the moment it does; the default action would exit with nothing logged.
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    service_box: list[Service] = []
    signal.signal(signal.SIGHUP, lambda *_: service_box and service_box[0].reload())
    try:
        service = Service(config)
        service_box.append(service)
        service.start()
    except (InputError, OSError, RuntimeError) as e:  # grpc reports a failed bind as RuntimeError
        print(f"faultgate-stream: cannot start: {e}", file=sys.stderr)
        return 2
    heap.settle()
    service.assembler.between_scans(heap.Gaps())  # the collector's pauses go between scans
    until_set(stop)  # not stop.wait(): a signal another thread took would never wake it
    # A shutdown that outlives its grace is a bug to find: every thread's stack goes to
    # stderr before a supervisor's SIGKILL can come (the process carries on meanwhile).
    faulthandler.dump_traceback_later(config.shutdown_grace + SHUTDOWN_STACKS_AFTER, exit=False)
    service.shutdown()
    faulthandler.cancel_dump_traceback_later()
    return 0
