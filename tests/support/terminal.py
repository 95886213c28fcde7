"""A command on a pseudo-terminal, as a person runs it: in its own session, with the terminal
as its controlling terminal and as its stdin, stdout and stderr. Ctrl-C typed there (`ctrl_c`)
is the terminal's SIGINT to the whole foreground process group, and the command sees a TTY
(rich draws its live display)."""

from __future__ import annotations

import fcntl
import os
import pty
import subprocess
import termios
import threading
from pathlib import Path


def _take_the_terminal() -> None:
    """In the child, after setsid: make its stdin (the terminal) its controlling terminal."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """`command` started in `cwd` on a new pseudo-terminal; what it writes is kept."""

    def __init__(self, command: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(
            command,
            cwd=cwd,
            env={**env, "TERM": "xterm-256color"},
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            preexec_fn=_take_the_terminal,
        )
        os.close(slave)
        self.output = bytearray()
        self.changed = threading.Condition()
        self.closed = False
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 4096)
            except OSError:  # the last process holding the terminal closed it
                chunk = b""
            with self.changed:
                self.output += chunk
                self.closed = not chunk
                self.changed.notify_all()
            if not chunk:
                return

    def text(self) -> str:
        """What the command wrote so far (line ends as the terminal sends them: CR LF)."""
        with self.changed:
            return self.output.decode(errors="replace")

    def wait_for(self, text: str, timeout: float = 60) -> bool:
        """Whether `text` came (waiting for it until the terminal closes or `timeout`)."""
        with self.changed:
            return self.changed.wait_for(
                lambda: text in self.output.decode(errors="replace") or self.closed, timeout
            ) and text in self.output.decode(errors="replace")

    def ctrl_c(self) -> None:
        """Type Ctrl-C: the terminal sends SIGINT to its foreground process group."""
        os.write(self.master, b"\x03")

    def finish(self, timeout: float = 60) -> int:
        """The command's exit code, once it ended (killed after `timeout`); closes the terminal."""
        try:
            return self.process.wait(timeout=timeout)
        finally:
            self.process.kill()
            self.process.wait()
            self.reader.join(timeout=10)
            os.close(self.master)
