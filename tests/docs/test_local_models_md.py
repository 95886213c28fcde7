"""docs/local-models.md's examples: `replan check` prints what the check prints against the
scripted server started as the example starts it (`python -m replan.testing --preset ...`), and
the `create_agent` agent with `TextCallRecoveryMiddleware` runs a call its server wrote as text."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from replan.cli.output import ExitCode
from replan.testing import PRESETS, ScriptedOpenAIServer, text, tool_call
from replan.testing.command import build_parser
from tests.support.cli_harness import invoke
from tests.support.readme import doc, python_blocks, run_example, section_text

LOCAL = doc("local-models.md")
SPEED = re.compile(r"^  speed .*$", re.M)
"""The one line that differs between two checks: how fast this machine answered."""


def _commands_and_output() -> tuple[list[str], str]:
    section = section_text("Checking a server: `replan check`", LOCAL)
    (commands,) = re.findall(r"^```bash\n(.*?)^```", section, re.M | re.S)
    (shown,) = re.findall(r"^```text\n(.*?)^```", section, re.M | re.S)
    return [line.split("#")[0].strip(" &") for line in commands.splitlines()], shown


def test_the_check_example_is_what_the_check_prints(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    serve, check = _commands_and_output()[0]
    assert serve.startswith("python -m replan.testing ")
    served = build_parser().parse_args(shlex.split(serve)[3:])
    environment, *command = shlex.split(check)
    assert (environment, command[0]) == ("OPENAI_API_KEY=test", "replan")
    documented_url = command[command.index("--base-url") + 1]
    assert documented_url == f"http://127.0.0.1:{served.port}/v1"

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with ScriptedOpenAIServer(served.responder, quirks=PRESETS[served.preset]) as server:
        command[command.index("--base-url") + 1] = server.base_url
        checked = invoke(capsys, *command[1:], "--quiet")

    assert checked.code == ExitCode.OK, checked.err
    printed = SPEED.sub("", checked.out.replace(server.base_url, documented_url))
    assert printed.strip() == SPEED.sub("", _commands_and_output()[1]).strip()


def test_the_create_agent_example_runs_the_call_llama_server_returned_as_text(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (example,) = python_blocks(
        "In your own `create_agent` agents: `TextCallRecoveryMiddleware`", LOCAL
    )
    with ScriptedOpenAIServer(quirks=PRESETS["llama-server"]) as server:  # calls as ```json
        server.push(tool_call("word_count", {"text": "plan and execute"}), text("3 words."))
        run_example(example, f"{LOCAL}:create-agent", server.base_url, monkeypatch)
        requests = server.requests
    assert capsys.readouterr().out.splitlines() == [
        "word_count {'text': 'plan and execute'} 1",
        "3 words.",
    ]
    (result,) = [m for m in requests[1]["messages"] if m["role"] == "tool"]
    assert result["content"] == "3"  # the tool ran on the arguments written in the text
