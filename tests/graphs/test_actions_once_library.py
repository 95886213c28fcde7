"""Actions run once for a library user (sync `invoke`, SQLite saver and store), proved with
real processes: a call in flight when the process was SIGKILLed is not made again without a
decision, and a finished call is never made again."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from replan.testing import ScriptedOpenAIServer
from tests.cli.test_actions_once import Script, _effects
from tests.support.kill_gates import kill_at_gate

pytestmark = pytest.mark.slow  # crash tests: real processes, killed mid-run

ROOT = Path(__file__).resolve().parents[2]


def _child(tmp: Path, server: ScriptedOpenAIServer, *resume: str, hold: str = "") -> Any:
    args = [str(tmp / "runs.sqlite"), str(tmp / "effects.txt"), server.base_url, "lib"]
    env = {"PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "test", "HOLD_IN": hold, "PATH": ""}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.acting_child", *args, *resume],
        env=env, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _answer(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    return dict(json.loads(out.splitlines()[-1]))


def test_a_library_run_killed_inside_a_call_asks_before_making_it_again(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(Script("append")) as server:
        kill_at_gate(_child(tmp_path, server, hold="b"), tmp_path / "effects.txt.gate")  # type: ignore[arg-type]
        paused = _answer(_child(tmp_path, server))
        (request,) = paused["interrupts"]
        assert request["action_requests"][0] == {
            "name": "append",
            "args": {"text": "b"},
            "description": request["action_requests"][0]["description"],
        }
        assert request["review_configs"][0]["allowed_decisions"] == ["approve", "respond", "reject"]
        answer = {"decisions": [{"type": "respond", "message": "append b done"}]}
        ended = _answer(_child(tmp_path, server, json.dumps(answer)))
        assert ended["response"].startswith("All 1 steps"), ended
    assert [e[:2] for e in _effects(tmp_path / "effects.txt")] == [("append", "a"), ("append", "b")]
