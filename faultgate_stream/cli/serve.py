"""``faultgate-stream serve [--config FILE]``: the live service until SIGTERM or SIGINT."""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from faultgate_stream.config import ConfigError, load
from faultgate_stream.model.errors import InputError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="YAML config (default: built-in defaults); FAULTGATE_STREAM__SECTION__KEY "
                                    "environment variables override it")


def run(args: argparse.Namespace) -> int:
    from faultgate_stream.service import Service, configure_logging

    try:
        config = load(args.config, os.environ)
    except ConfigError as e:
        print(f"faultgate-stream: {e}", file=sys.stderr)
        return 2
    configure_logging(config.log.level)
    try:
        service = Service(config)
        service.start()
    except (InputError, OSError) as e:
        print(f"faultgate-stream: cannot start: {e}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    signal.signal(signal.SIGHUP, lambda *_: service.reload())
    stop.wait()
    service.shutdown()
    return 0
