"""`python -m replan.testing`: the scripted server as its own process.

By default it answers as a cooperative model (`replan.testing.cooperative.respond`: `replan
check`'s probes, and replan's runs); `--preset` makes it depart from the OpenAI API as that
local server does (`replan.testing.quirks.PRESETS`), `--responder module:function` answers with
another responder. It says on stdout where it listens (and writes the port to `--port-file`).
A bad option, or a port it cannot listen on (taken, or not allowed), is a usage error: one line
on stderr and exit code 2, as `replan`'s own usage errors.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import signal
import threading
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

from replan.testing.quirks import PRESETS, Quirks
from replan.testing.replies import MODEL_ID, Responder
from replan.testing.server import ScriptedOpenAIServer

DEFAULT_RESPONDER = "replan.testing.cooperative:respond"
USAGE_ERROR = 2
"""The exit code of a bad option or a port it cannot listen on (argparse's, as `replan`'s)."""


def _responder(spec: str) -> Responder:
    """The `module:function` a `--responder` names."""
    module_name, _, attr = spec.partition(":")
    try:
        responder: Responder = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise argparse.ArgumentTypeError(f"cannot load {spec!r}: {exc}") from None
    return responder


def _port(value: str) -> int:
    """A `--port`: a TCP port number, 0 for a free one."""
    if not value.isdigit() or int(value) > 65535:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port (0 to 65535)")
    return int(value)


def build_parser() -> argparse.ArgumentParser:
    """The options of `python -m replan.testing`."""
    parser = argparse.ArgumentParser(
        prog="python -m replan.testing",
        description="A scripted OpenAI-compatible chat server on 127.0.0.1, for offline runs "
        "and tests; it serves until SIGTERM or Ctrl-C.",
    )
    parser.add_argument("--port", type=_port, default=0, help="port to listen on (default: free)")
    parser.add_argument("--port-file", type=Path, help="write the port here once listening")
    parser.add_argument(
        "--preset",
        choices=list(PRESETS),
        help="answer as that local server does (default: as OpenAI's API does)",
    )
    parser.add_argument(
        "--responder",
        type=_responder,
        default=DEFAULT_RESPONDER,
        metavar="MODULE:FUNCTION",
        help=f"what answers each request (default: {DEFAULT_RESPONDER}, a cooperative model "
        "that answers `replan check` and plays replan's runs)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    """Serve until SIGTERM/SIGINT; say where once listening (and write the port to
    `--port-file`)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    quirks = PRESETS[args.preset] if args.preset else Quirks()
    with ExitStack() as stack:
        try:
            server = stack.enter_context(
                ScriptedOpenAIServer(args.responder, port=args.port, quirks=quirks)
            )
        except OSError as exc:
            why = "is taken" if exc.errno == errno.EADDRINUSE else "cannot be used"
            parser.exit(USAGE_ERROR, f"{parser.prog}: port {args.port} {why}: {exc.strerror}\n")
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        if args.port_file is not None:
            tmp = args.port_file.with_suffix(".tmp")
            tmp.write_text(str(server.port))
            tmp.replace(args.port_file)
        imitating = f" as {args.preset} does" if args.preset else ""
        print(f"Serving {MODEL_ID} at {server.base_url}{imitating}", flush=True)
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass
