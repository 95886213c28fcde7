"""Input the command line refuses in one clear line that names what to type, losing nothing
stored: one price without the other, an empty model or thread id."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from replan.testing import ScriptedOpenAIServer
from replan.testing import plan_script as script
from tests.support.cli_harness import invoke

TOOLS_FILE = '''
from langchain_core.tools import tool


@tool
def price(item: str) -> str:
    """The price of an item."""
    return f"{item} costs 4.20"


TOOLS = [price]
'''


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """`tmp_path/work`, the current folder, with a scripted model server to run against."""
    (tmp_path / "work").mkdir()
    with ScriptedOpenAIServer(script.respond) as server:
        monkeypatch.chdir(tmp_path / "work")
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        yield tmp_path / "work"


def _stored(here: Path) -> list[str]:
    return sorted(path.name for path in here.iterdir() if path.name.startswith("replan.sqlite"))


@pytest.mark.parametrize("price", ["--price-in", "--price-out"])
def test_one_price_alone_names_the_options(
    here: Path, price: str, capsys: pytest.CaptureFixture[str]
) -> None:
    refused = invoke(capsys, "run", "Ship it", "--thread-id", "p", price, "1")
    assert (refused.code, refused.err) == (
        2,
        "replan: --price-in and --price-out go together: give both\n",
    )
    assert _stored(here) == []
    assert invoke(capsys, "run", "Ship it in 1 steps", "--thread-id", "p", "--quiet").code == 0
    resumed = invoke(capsys, "resume", "--thread-id", "p", price, "1")  # the run has no prices
    assert (resumed.code, resumed.err) == (refused.code, refused.err)


def test_one_price_changes_a_run_that_has_both(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prices = ("--price-in", "1", "--price-out", "2")
    started = invoke(capsys, "run", "Ship it in 1 steps", "--thread-id", "p", *prices, "--quiet")
    assert started.code == 0, started.err
    resumed = invoke(capsys, "resume", "--thread-id", "p", "--price-in", "3", "--quiet")
    assert resumed.code == 0, resumed.err  # it has ended: its answer again


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (("run", "Ship it", "--model", ""), "--model"),
        (("run", "Ship it", "--model", " "), "--model"),
        (("run", "Ship it", "--thread-id", ""), "--thread-id"),
        (("resume", "--thread-id", ""), "--thread-id"),
        (("show", "--thread-id", ""), "--thread-id"),
        (("check", "--model", ""), "--model"),
    ],
)
def test_an_empty_name_is_refused(
    here: Path, args: tuple[str, ...], option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        invoke(capsys, *args)
    assert exited.value.code == 2
    command = args[0]
    assert capsys.readouterr().err == (
        f"replan {command}: argument {option}: must not be empty (see replan {command} --help)\n"
    )
    assert _stored(here) == []
