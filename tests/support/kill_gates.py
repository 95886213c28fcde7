"""Kill a child process at one exact moment, and prove that the moment was reached.

The child calls `hold_here(gate)` at the moment under test: it writes the gate file, then waits
to be killed. The parent calls `kill_at_gate(process, gate)`: once the gate file exists it sends
SIGKILL, so the kill lands at that moment and no sooner or later.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import NoReturn

HOLD_SECONDS = 120.0
NEVER_KILLED = 3
"""The exit code of a child that reached its gate but was not killed."""


def hold_here(gate: Path) -> NoReturn:
    """In the child: announce that the moment is reached, then wait for the kill."""
    gate.write_text(str(os.getpid()))
    time.sleep(HOLD_SECONDS)
    os._exit(NEVER_KILLED)


def kill_at_gate(process: subprocess.Popen[str], gate: Path, timeout: float = 60.0) -> None:
    """SIGKILL `process` once it has written `gate`; fail if it ends or stalls before."""
    deadline = time.monotonic() + timeout
    while not gate.exists():
        if process.poll() is not None:
            _, err = process.communicate()
            raise AssertionError(f"the child ended ({process.returncode}) before {gate}: {err}")
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"the child did not reach {gate} in {timeout}s")
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)
    assert process.returncode == -signal.SIGKILL
