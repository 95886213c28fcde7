"""Every documented error of `replan`, through the real command: one line on stderr, the
documented exit code, never a traceback, and nothing stored that was refused."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from replan.cli import main
from replan.cli.output import ExitCode
from replan.testing import ScriptedOpenAIServer
from replan.testing import plan_script as script
from tests.support.cli_harness import REPLAN, Outcome, cli_env, finish, invoke, run_cli, start_cli

pytestmark = pytest.mark.slow  # real processes

EMPTY = "replan: the objective is empty: say what the run should achieve"


def assert_error(outcome: Outcome, code: ExitCode, line: str) -> None:
    """`outcome` failed with `code` and has `line` (a regex) as a line of stderr, no traceback."""
    assert outcome.code == code, outcome.err
    assert "Traceback" not in outcome.err and "Traceback" not in outcome.out
    lines = outcome.err.splitlines()
    assert any(re.fullmatch(line, text) for text in lines), lines


def assert_nothing_stored(cwd: Path) -> None:
    assert [path.name for path in cwd.iterdir() if path.name.startswith("replan.sqlite")] == []


@pytest.fixture
def stored(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """`tmp_path` holding replan.sqlite with a finished run `done`."""
    with ScriptedOpenAIServer(script.respond) as server:
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        assert main(["run", "Done in 1 steps", "--thread-id", "done", "--quiet"]) == 0
    yield tmp_path


# --- options, refused before anything is stored -------------------------------------------


BAD_OPTIONS = {
    "--max-iterations 0": "argument --max-iterations: must be from 1 to 1000, not 0",
    "--max-iterations -3": "argument --max-iterations: must be from 1 to 1000, not -3",
    "--max-iterations many": "argument --max-iterations: not a whole number: 'many'",
    "--executor-max-steps 0": "argument --executor-max-steps: must be from 1 to 1000, not 0",
    "--max-retries -1": "argument --max-retries: must be from 0 to 1000, not -1",
    "--timeout 0": "argument --timeout: must be more than 0 seconds, not 0",
    "--timeout nan": "argument --timeout: not a finite number: 'nan'",
    "--temperature 3": "argument --temperature: must be from 0 to 2, not 3",
    "--base-url localhost:8080": (
        "argument --base-url: not an http:// or https:// URL: 'localhost:8080'"
    ),
}


@pytest.mark.parametrize(("option", "message"), BAD_OPTIONS.items(), ids=list(BAD_OPTIONS))
def test_bad_options_are_refused_before_a_thread_exists(
    tmp_path: Path, option: str, message: str
) -> None:
    refused = run_cli(None, tmp_path, "run", "Ship it", "--thread-id", "mi0", *option.split())
    assert refused.err == f"replan run: {message} (see replan run --help)\n"
    assert_error(refused, ExitCode.USAGE, re.escape(refused.err.strip()))
    assert_nothing_stored(tmp_path)
    resumed = run_cli(None, tmp_path, "resume", "--thread-id", "mi0", *option.split())
    assert resumed.err == f"replan resume: {message} (see replan resume --help)\n"


def test_argparse_usage_errors_are_one_line(tmp_path: Path) -> None:
    for args, line in [
        (
            ["resume", "--thread-id", "x", "--approve", "--reject"],
            "replan resume: argument --reject: not allowed with argument --approve .*",
        ),
        (["show"], "replan show: the following arguments are required: --thread-id .*"),
        (["fly"], "replan: argument COMMAND: invalid choice: 'fly' .*"),
        (
            ["run", "Ship it", "--max-iteratoins", "3"],  # a typo: the command's help has the name
            re.escape(
                "replan run: unrecognized arguments: --max-iteratoins 3 (see replan run --help)"
            ),
        ),
        (
            ["threads", "--thread-id", "x"],
            re.escape(
                "replan threads: unrecognized arguments: --thread-id x (see replan threads --help)"
            ),
        ),
    ]:
        outcome = run_cli(None, tmp_path, *args)
        assert_error(outcome, ExitCode.USAGE, line)
        assert len(outcome.err.splitlines()) == 1


# --- objectives ---------------------------------------------------------------------------


def _file(name: str, data: bytes) -> Callable[[Path], None]:
    def write(cwd: Path) -> None:
        (cwd / name).write_bytes(data)

    return write


OBJECTIVES = [
    pytest.param(["run", ""], None, None, EMPTY, id="empty"),
    pytest.param(["run", "  \t "], None, None, EMPTY, id="blank"),
    pytest.param(
        ["run"],
        None,
        None,
        r'replan: no objective: give it as "TEXT", - \(stdin\) or --objective-file PATH',
        id="none",
    ),
    pytest.param(["run", "-"], b" \n\n", None, EMPTY, id="blank stdin"),
    pytest.param(
        ["run", "-"],
        b"plan \xff\xfe it",
        None,
        r"replan: the objective in stdin is not valid UTF-8 \(byte 5\)",
        id="bad stdin",
    ),
    pytest.param(
        ["run", "--objective-file", "o.txt"],
        None,
        _file("o.txt", b"caf\xe9"),
        r"replan: the objective in o.txt is not valid UTF-8 \(byte 3\)",
        id="bad file",
    ),
    pytest.param(
        ["run", "--objective-file", "missing.txt"],
        None,
        None,
        "replan: cannot read the objective file missing.txt: No such file or directory",
        id="no file",
    ),
    pytest.param(
        ["run", "--objective-file", "."],
        None,
        None,
        r"replan: cannot read the objective file \.: Is a directory",
        id="folder",
    ),
    pytest.param(
        ["run", "x", "--objective-file", "o.txt"],
        None,
        _file("o.txt", b"y"),
        "replan: give the objective or --objective-file, not both",
        id="both",
    ),
]


@pytest.mark.parametrize(("args", "stdin", "setup", "line"), OBJECTIVES)
def test_bad_objectives_are_refused(
    tmp_path: Path,
    args: list[str],
    stdin: bytes | None,
    setup: Callable[[Path], None] | None,
    line: str,
) -> None:
    if setup is not None:
        setup(tmp_path)
    outcome = run_cli(None, tmp_path, *args, input=stdin)
    assert_error(outcome, ExitCode.USAGE, line)
    assert len(outcome.err.splitlines()) == 1
    assert_nothing_stored(tmp_path)


def test_invalid_utf8_on_the_command_line_is_refused_not_altered(tmp_path: Path) -> None:
    for args, what in [
        ([b"run", b"ship \xff it"], "the objective"),
        ([b"run", b"ship it", b"--thread-id", b"t\xe9"], "--thread-id"),
    ]:
        process = subprocess.Popen(
            [REPLAN.encode(), *args],
            cwd=tmp_path,
            env=cli_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert_error(finish(process), ExitCode.USAGE, f"replan: {what} is not valid UTF-8")
    assert_nothing_stored(tmp_path)


# --- the runs database --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "db", "reason"),
    [
        ("run", "runs", "it is a folder"),
        ("run", "nowhere/runs.sqlite", "the folder nowhere does not exist"),
        ("run", "junk.db", "file is not a database"),
        ("show", "junk.db", "file is not a database"),
        ("threads", "empty.db", None),
    ],
)
def test_unusable_database(tmp_path: Path, command: str, db: str, reason: str | None) -> None:
    (tmp_path / "runs").mkdir()
    (tmp_path / "junk.db").write_text("not a database at all, but long enough to be read\n" * 20)
    (tmp_path / "empty.db").touch()
    args = {"run": ["run", "Ship it"], "show": ["show", "--thread-id", "t"], "threads": ["threads"]}
    outcome = run_cli(None, tmp_path, *args[command], "--db", db)
    line = (
        f"replan: cannot open the runs database {db}: {reason}"
        if reason
        else f"replan: {db} holds no replan runs"
    )
    assert_error(outcome, ExitCode.DATABASE_UNAVAILABLE, re.escape(line))
    assert len(outcome.err.splitlines()) == 1
    assert (tmp_path / "junk.db").read_text().startswith("not a database")
    assert (tmp_path / "empty.db").stat().st_size == 0


WITHOUT_PERMISSION_OVERRIDE = [
    "setpriv",
    "--bounding-set",
    "-dac_override,-dac_read_search",
    "--",
]
"""How root runs a command for which file permissions hold: still root, so it reaches the
interpreter and the package wherever they are (a clone in a private folder, mode 0700, as
`mktemp -d` makes it), but without the capabilities that let root write anywhere."""


@pytest.fixture
def read_only_copy(stored: Path) -> Iterator[tuple[Path, list[str]]]:
    """A copy of `stored`'s database in a folder the `replan` process may not write to, and the
    command prefix that runs it as a process for which that holds (root may write anywhere)."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("needs setpriv to run replan as root without its permission override")
        prefix = WITHOUT_PERMISSION_OVERRIDE
    folder = Path(tempfile.mkdtemp(prefix="replan-ro-"))
    try:
        shutil.copy(stored / "replan.sqlite", folder / "replan.sqlite")
        (folder / "replan.sqlite").chmod(0o444)
        folder.chmod(0o555)
        yield folder, prefix
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)


def test_show_and_threads_read_a_read_only_database(
    read_only_copy: tuple[Path, list[str]],
) -> None:
    folder, prefix = read_only_copy
    before = sorted(p.name for p in folder.iterdir())

    def replan(*args: str) -> Outcome:
        process = subprocess.Popen(
            [*prefix, REPLAN, *args],
            cwd=folder,
            env=cli_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        return finish(process)

    listed = replan("threads")
    assert listed.code == 0 and listed.err == "", listed.err
    assert listed.out.splitlines()[1].startswith("done ")
    shown = replan("show", "--thread-id", "done")
    assert shown.code == 0 and "Status: finished" in shown.out, shown.err
    refused = replan("run", "Ship it")
    assert_error(
        refused,
        ExitCode.DATABASE_UNAVAILABLE,
        "replan: cannot open the runs database replan.sqlite: attempt to write a readonly database",
    )
    assert sorted(p.name for p in folder.iterdir()) == before
    new_file = replan("run", "Ship it", "--db", "new.sqlite")
    assert_error(
        new_file,
        ExitCode.DATABASE_UNAVAILABLE,
        re.escape(f"replan: cannot open the runs database new.sqlite: the folder {folder} is not ")
        + "writable, so the file cannot be created there",
    )
    assert sorted(p.name for p in folder.iterdir()) == before


# --- runs ---------------------------------------------------------------------------------


def test_unknown_runs_and_misplaced_answers(stored: Path) -> None:
    assert_error(
        run_cli(None, stored, "resume", "--thread-id", "nope"),
        ExitCode.NO_SUCH_RUN,
        "replan: no run with thread id nope in replan.sqlite",
    )
    assert_error(
        run_cli(None, stored, "show", "--thread-id", "x", "--db", "gone.sqlite"),
        ExitCode.NO_SUCH_RUN,
        "replan: no database at gone.sqlite",
    )
    assert_error(
        run_cli(None, stored, "resume", "--thread-id", "done", "--approve"),
        ExitCode.USAGE,
        re.escape("replan: thread done has no plan waiting for approval (it has ended)"),
    )


def test_model_unavailable(tmp_path: Path) -> None:
    env = cli_env()
    del env["OPENAI_API_KEY"]
    no_key = finish(start_cli(None, tmp_path, "run", "Ship it", "--thread-id", "k", env=env))
    assert_error(no_key, ExitCode.MODEL_UNAVAILABLE, "replan: OPENAI_API_KEY is not set: .*")
    assert len(no_key.err.splitlines()) == 1  # no "the run is saved": nothing could run
    assert_nothing_stored(tmp_path)
    with ScriptedOpenAIServer(script.respond) as gone:
        url = gone.base_url
    down = run_cli(None, tmp_path, "run", "Ship it", "--base-url", url, "--max-retries", "0")
    assert_error(down, ExitCode.MODEL_UNAVAILABLE, "replan: cannot reach the model server.*")


# --- output nobody reads ------------------------------------------------------------------


@pytest.mark.parametrize("args", [["threads", "--json"], ["show", "--thread-id", "done"]])
def test_a_reader_that_went_away_is_not_an_error(stored: Path, args: list[str]) -> None:
    """stdout is a pipe whose reader has closed before `replan` writes (as `| head` does)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        process = subprocess.Popen(
            [REPLAN, *args],
            cwd=stored,
            env=cli_env(),
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
        )
    finally:
        os.close(write_end)
    _, err = process.communicate(timeout=60)
    assert (process.returncode, err) == (0, b"")


def test_head_of_threads(stored: Path) -> None:
    done = subprocess.run(
        f"{REPLAN} threads | head -1",
        shell=True,
        cwd=stored,
        env=cli_env(),
        capture_output=True,
        timeout=60,
    )
    assert done.stdout.split() == [b"THREAD", b"STATUS", b"UPDATED", b"OBJECTIVE"]
    assert done.stderr == b""


def test_the_in_process_entry_point_reports_usage_errors_too(
    stored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = invoke(capsys, "run", "  ")
    assert (outcome.code, outcome.err) == (2, EMPTY + "\n")


def test_an_unexpected_error_is_one_line_unless_debugging(
    stored: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("surprise")

    monkeypatch.setattr("replan.cli.stored_runs.reading_graph", broken)
    outcome = invoke(capsys, "show", "--thread-id", "done")
    assert (outcome.code, outcome.err) == (1, "replan: unexpected error: KeyError: 'surprise'\n")
    monkeypatch.setenv("REPLAN_DEBUG", "1")
    with pytest.raises(KeyError):
        invoke(capsys, "show", "--thread-id", "done")
