"""The README's plan–execute example runs as written, against a fake model."""

from __future__ import annotations

import pytest

from replan.graphs import chat_model as model_factory
from replan.graphs.context import Context
from tests.support.fake_models import FakeChatModel, call, plan, respond, text
from tests.support.readme import README, python_blocks


def test_the_readme_example_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = FakeChatModel(
        planner=[plan("Count the words of the phrase")],
        executor=[call("word_count", text="to be or not to be"), text("The phrase has 6 words.")],
        replanner=[respond("There are 6 words.")],
    )
    built_for: list[Context] = []

    def fake_factory(context: Context, max_tokens: int) -> FakeChatModel:
        built_for.append(context)
        return fake

    monkeypatch.setattr(model_factory, "chat_model_from_context", fake_factory)
    (code,) = python_blocks("The plan–execute–replan graph")
    exec(compile(code, f"{README}:plan-execute", "exec"), {"__name__": "readme_example"})

    printed = capsys.readouterr().out
    assert printed.splitlines() == [
        "There are 6 words.",
        "- Count the words of the phrase => The phrase has 6 words.",
    ]
    assert {c.model for c in built_for} == {"gpt-4o-mini"}
    assert "6" in fake.requests_of("executor")[1].prompt  # the tool really ran
