"""`python -m replan.testing`: the scripted server as its own process."""

from __future__ import annotations

import argparse
import importlib
import signal
import threading
from collections.abc import Sequence
from pathlib import Path

from replan.testing.replies import Responder
from replan.testing.server import ScriptedOpenAIServer


def _load_responder(spec: str) -> Responder:
    module_name, _, attr = spec.partition(":")
    responder: Responder = getattr(importlib.import_module(module_name), attr)
    return responder


def main(argv: Sequence[str] | None = None) -> None:
    """Serve until SIGTERM/SIGINT; write the port to `--port-file` once listening."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", type=Path, required=True)
    parser.add_argument("--responder", required=True, help="module:function")
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with ScriptedOpenAIServer(_load_responder(args.responder), port=args.port) as server:
        tmp = args.port_file.with_suffix(".tmp")
        tmp.write_text(str(server.port))
        tmp.replace(args.port_file)
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass
