"""An HTTP server on 127.0.0.1 that answers from a daemon thread while in use: the scripted
OpenAI-compatible server and the benchmarks' metering proxy are both one."""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer
from types import TracebackType
from typing import Self

POLL_SECONDS = 0.05
"""How often the serving thread looks for a shutdown request (`stop` waits at most this)."""


class BackgroundServer:
    """A context manager serving `make_server()` from a daemon thread; `stop` frees its port
    (requests in flight are abandoned). Subclasses say what they serve in `make_server`."""

    _server: ThreadingHTTPServer | None = None

    def make_server(self) -> ThreadingHTTPServer:
        """The HTTP server to run (bound to its address already)."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        self._server = self.make_server()
        threading.Thread(
            target=self._server.serve_forever, args=(POLL_SECONDS,), daemon=True
        ).start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop serving and free the port."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def bound_port(self) -> int:
        """The port it listens on; RuntimeError when it is not running."""
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not running: use it in a with block")
        port: int = self._server.server_address[1]
        return port
