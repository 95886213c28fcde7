"""Input the command line refuses in one clear line that names what to type, losing nothing
stored: one price without the other, an empty model or thread id, a tools file that is not
there (its path shown with `..` resolved) or no longer there for a resume."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from replan.testing import ScriptedOpenAIServer
from replan.testing import plan_script as script
from tests.support.cli_harness import PRICE_TOOLS, invoke


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


def test_a_tools_path_is_shown_without_dot_dot(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (here.parent / "mytools").mkdir()
    (here.parent / "mytools" / "shop.py").write_text(PRICE_TOOLS)
    for reference, problem in [
        ("../mytools/none.py:TOOLS", f"no file {here.parent}/mytools/none.py"),
        ("../mytools/shop.py:MISSING", f"{here.parent}/mytools/shop.py has no MISSING"),
    ]:
        refused = invoke(capsys, "run", "Ship it", "--tools", reference)
        assert (refused.code, refused.err) == (2, f"replan: --tools {reference}: {problem}\n")
    assert _stored(here) == []


def test_a_resume_whose_tools_moved_says_how_to_give_them(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (here / "shop.py").write_text(PRICE_TOOLS)
    args = ("--thread-id", "g", "--approve-plan", "--tools", "./shop.py:TOOLS")
    assert invoke(capsys, "run", "Ship it in 2 steps", *args).code == 4
    (here / "moved").mkdir()
    (here / "shop.py").rename(here / "moved" / "shop.py")
    refused = invoke(capsys, "resume", "--thread-id", "g", "--approve")
    assert (refused.code, refused.err) == (
        2,
        f"replan: --tools {here}/shop.py:TOOLS: no file {here}/shop.py (the run's tools: give "
        "them anew with replan resume --thread-id g --tools PATH.py:NAME or "
        "package.module:NAME)\n",
    )
    shown = invoke(capsys, "show", "--thread-id", "g")
    assert "Status: waiting for approval" in shown.out  # nothing lost
    resumed = invoke(
        capsys, "resume", "--thread-id", "g", "--approve", "--tools", "moved/shop.py:TOOLS"
    )
    assert resumed.code == 0, resumed.err


@pytest.mark.parametrize("given", ["abc", "0", "-5", "inf"])
def test_a_lease_length_that_is_not_seconds_is_one_line(
    here: Path, given: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("REPLAN_LEASE_SECONDS", given)
    refused = invoke(capsys, "run", "Ship it in 1 steps", "--thread-id", "l", "--quiet")
    assert (refused.code, refused.err) == (
        2,
        f"replan: REPLAN_LEASE_SECONDS must be a number of seconds above 0, not {given!r}\n",
    )
    assert _stored(here) == []  # refused before anything was stored
    monkeypatch.setenv("REPLAN_LEASE_SECONDS", "2.5")
    assert invoke(capsys, "run", "Ship it in 1 steps", "--thread-id", "l", "--quiet").code == 0
