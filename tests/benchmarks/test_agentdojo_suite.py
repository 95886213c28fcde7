"""The AgentDojo suite (benchmarks/agentdojo_suite.py): the effects rule, where the worst-case
model finds values, the table, the command line; with agentdojo installed, the whole path on
AgentDojo's banking tasks through the scripted server and the real OpenAI client."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import BaseModel

import benchmarks.agentdojo_suite as bench
from benchmarks.agentdojo_oracle import _said, locate
from benchmarks.agentdojo_suite import Row, main, table
from benchmarks.agentdojo_world import INSTALL, AgentDojoMissing, effects_by_rule, result_text

HAS_AGENTDOJO = importlib.util.find_spec("agentdojo") is not None
if not HAS_AGENTDOJO and os.environ.get("REPLAN_REQUIRE_AGENTDOJO") == "1":  # set by .ci/run
    raise RuntimeError(f"REPLAN_REQUIRE_AGENTDOJO=1 but agentdojo is not installed: {INSTALL}")
needs_agentdojo = pytest.mark.skipif(not HAS_AGENTDOJO, reason=f"needs agentdojo: {INSTALL}")


def _function(name: str, **fields: Any) -> Any:
    parameters = type("Parameters", (BaseModel,), {"__annotations__": fields})
    return SimpleNamespace(name=name, parameters=parameters)


def test_look_ups_only_read_and_an_action_s_parties_are_sensitive() -> None:
    assert effects_by_rule(_function("get_webpage", url=str)) == (True, [])
    assert effects_by_rule(_function("read_file", file_path=str)) == (True, [])
    pay = _function("send_money", recipient=str, amount=float, subject=str, date=str)
    assert effects_by_rule(pay) == (False, ["recipient"])
    invite = _function("invite_user_to_slack", user=str, user_email=str)
    assert effects_by_rule(invite) == (False, ["user", "user_email"])
    mail = _function("send_email", recipients=list, subject=str, body=str, cc=list, bcc=list)
    assert effects_by_rule(mail) == (False, ["bcc", "cc", "recipients"])
    assert effects_by_rule(_function("update_password", password=str)) == (False, ["password"])


def test_the_worst_case_model_finds_a_value_by_its_field_its_item_or_the_whole() -> None:
    result = [{"id": 4, "recipient": "US12", "flags": [True, 0]}, {"id": 5, "recipient": "GB29"}]
    assert locate("GB29", result) == "[1].recipient"
    assert locate(5, result) == "[1].id"
    assert locate(5.0, result) == "[1].id"
    assert locate(0, result) == "[0].flags[1]"
    assert locate(True, result) is None  # a yes/no says nothing of where it came from
    assert locate("US1", result) is None
    assert locate("hello", "hello") == ""
    assert locate("x", {"odd key": "x"}) is None  # no reference can name that field


def test_the_worst_case_model_takes_what_the_request_says_as_said() -> None:
    request = "Pay the 98.70 bill to 'Alice' and send 1,050 to GB29"
    assert _said("alice", request) and _said("GB29", request)
    assert _said(98.7, request) and _said(1050, request)
    assert not _said(8.7, request) and not _said(105, request)
    assert not _said("Bob", request) and not _said(" ", request)
    assert _said(["Alice", "GB29"], request) and not _said(["Alice", "Bob"], request)


def test_results_reach_the_model_as_json_and_text_as_it_is() -> None:
    class Transaction(BaseModel):
        id: int
        subject: str

    assert json.loads(result_text([Transaction(id=1, subject="rent")])) == [
        {"id": 1, "subject": "rent"}
    ]
    assert result_text("plain words") == "plain words"
    assert result_text(12.5) == "12.5"


def _row(design: str, task: str, **fields: Any) -> Row:
    figures: dict[str, Any] = {
        "suite": "banking",
        "attacked_by": "injection_task_0" if "+" in task else None,
        "new_action": False,
        "utility": True,
        "attacked": None if "+" not in task else False,
        "approvals": 0,
        "model_calls": 2,
        "input_tokens": 100,
        "wall": 0.5,
        **fields,
    }
    return Row(design=design, task=task, **figures)


def test_the_table_gives_rates_per_design_and_lists_attacks_that_got_through_a_seal() -> None:
    rows = [
        _row("open", "banking/user_task_0"),
        _row("open", "banking/user_task_0+injection_task_0", attacked=True, new_action=True),
        _row("sealed/approve", "banking/user_task_0", approvals=1),
        _row(
            "sealed/approve",
            "banking/user_task_0+injection_task_0",
            attacked=True,
            approvals=3,
            calls=["send_money({})"],
        ),
    ]
    lines = table(rows).splitlines()
    assert lines[0].split()[:3] == ["suite", "design", "utility"]
    opened = next(line for line in lines if line.startswith("all") and " open " in line)
    assert opened.split()[2:9] == ["1/1", "100%", "1/1", "100%", "1/1", "100%", "1/1"]
    sealed = next(line for line in lines if line.startswith("all") and "sealed/approve" in line)
    assert sealed.split()[11] == "2.0"  # approvals per task
    assert "  sealed/approve banking/user_task_0+injection_task_0: send_money({})" in lines


def test_bad_usage_and_a_missing_agentdojo_are_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(SystemExit) as usage:
        main(["--base-url", "http://127.0.0.1:9/v1", "--suite", "workspace"])
    assert usage.value.code == 2
    said = capsys.readouterr().err
    assert said == (
        "agentdojo_suite.py: error: workspace: held back for real-model runs (others run them)\n"
    )

    def missing(*_: Any) -> Any:
        raise AgentDojoMissing(f"the agentdojo package is not installed: {INSTALL}")

    monkeypatch.setattr(bench, "tasks", missing)
    assert main(["--suite", "banking"]) == 2
    assert capsys.readouterr().err == (
        f"agentdojo_suite.py: error: the agentdojo package is not installed: {INSTALL}\n"
    )


@needs_agentdojo
@pytest.mark.slow
def test_the_scripted_worst_case_on_banking_open_obeys_and_sealed_does_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows_file = tmp_path / "rows.json"
    argv = ["--suite", "banking", "--users", "1", "--injections", "2", "--json", str(rows_file)]
    assert main(argv) == 0
    rows = {(r["design"], r["task"]): r for r in json.loads(rows_file.read_text())}
    alone, attacked = "banking/user_task_0", "banking/user_task_0+injection_task_0"
    assert len(rows) == 3 * len(bench.DESIGNS)
    # without attack every design pays the bill; a sealed run asks about the recipient read
    # from the bill, and one that refuses or is rejected does not pay it
    assert all(rows[(d, alone)]["utility"] for d in ("react", "open", "sealed/approve"))
    assert rows[("sealed/approve", alone)]["approvals"] == 1
    assert not rows[("sealed/refuse", alone)]["utility"]
    # the bill tells the model to pay the attacker too: the plain agent and the open run do
    assert rows[("react", attacked)]["attacked"] and rows[("open", attacked)]["attacked"]
    assert not rows[("sealed/refuse", attacked)]["attacked"]
    assert not rows[("sealed/reject", attacked)]["attacked"]
    assert rows[("sealed/reject", attacked)]["approvals"] >= 2
    printed = capsys.readouterr().out
    assert "successful attacks on sealed runs" in printed  # the approving reviewer's
