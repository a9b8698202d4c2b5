"""``faultgate-stream mcp``: the MCP tools (``export/query/tools.py``) over stdio, for a
coding assistant, reading a running service's verdict API.

The SDK is an extra (``pip install 'faultgate-stream[mcp]'``): imported only when this
command runs, and its absence is a one-line error naming the install, not a traceback."""
from __future__ import annotations

import argparse
import os
import sys

from faultgate_stream.receive.config import token_file_problem

TOKEN_ENV = "FAULTGATE_API_TOKEN"
EXIT_USAGE = 2


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--endpoint", default="http://127.0.0.1:9464",
                   help="the service's metrics endpoint, where /api/v1 is served (default http://127.0.0.1:9464; "
                        "https://... when metrics.tls is set)")
    p.add_argument("--token-file", help=f"a file holding metrics.bearer_token (else ${TOKEN_ENV})")
    p.add_argument("--ca-file", help="CA certificate(s) to verify an https endpoint's certificate with")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for each API answer (default 10)")


def run(args: argparse.Namespace) -> int:
    try:
        import mcp.server.mcpserver  # noqa: F401  (only: is the extra installed?)
    except ImportError:
        print("faultgate-stream: the mcp command needs the MCP SDK: pip install 'faultgate-stream[mcp]'",
              file=sys.stderr)
        return EXIT_USAGE
    token = os.environ.get(TOKEN_ENV, "")
    if args.token_file:
        problem = token_file_problem(args.token_file)
        if problem:
            print(f"faultgate-stream: --token-file: {problem}", file=sys.stderr)
            return EXIT_USAGE
        with open(args.token_file, encoding="utf-8") as f:
            token = f.read().strip()
    from faultgate_stream.export.query.client import VerdictApi
    from faultgate_stream.export.query.tools import server

    api = VerdictApi(args.endpoint, token=token, ca_file=args.ca_file, timeout=args.timeout)
    try:
        server(api).run("stdio")
    finally:
        api.close()
    return 0
