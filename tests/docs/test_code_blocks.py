"""Every ```python block of README.md and docs/*.md runs, so no example can rot.

A block with no mark runs here as written, in an empty working folder, with `OPENAI_API_KEY`
set and `OPENAI_BASE_URL` pointing at a scripted server that answers as
`replan.testing.plan_script` does (so `ChatOpenAI` and the plan–execute graph work offline).
A block marked `<!-- tested-in: FILE -->` on the line before it is run by FILE, with checks of
its own; `<!-- not-run: why -->` says why nothing can run it (see tests/support/readme.py).
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from replan.testing import ScriptedOpenAIServer
from replan.testing import plan_script as script
from tests.support.readme import REPO, Block, code_blocks, documents, python_blocks

BLOCKS = [block for path in documents() for block in code_blocks(path)]
UNMARKED = [block for block in BLOCKS if block.mark is None]


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """A working folder of its own, and os.environ restored whatever the example sets."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REPLAN_PLANS_DIR", str(tmp_path / "plans"))
    saved = dict(os.environ)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _defined(code: str) -> set[str]:
    """The names a block's top-level statements bind (assignments, defs, classes, imports)."""
    names: set[str] = set()
    for statement in ast.parse(code).body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(statement.name)
        elif isinstance(statement, ast.Import | ast.ImportFrom):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in statement.names}
        elif isinstance(statement, ast.Assign | ast.AnnAssign | ast.With | ast.For):
            targets = statement.targets if isinstance(statement, ast.Assign) else []
            found = [*targets, getattr(statement, "target", None)]
            if isinstance(statement, ast.With):
                found += [item.optional_vars for item in statement.items]
            for target in found:
                if target is not None:
                    names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names


def _prints(code: str) -> bool:
    """Whether a block calls `print` anywhere."""
    return any(
        isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print"
        for node in ast.walk(ast.parse(code))
    )


@pytest.mark.parametrize("block", UNMARKED, ids=lambda block: block.name)
def test_the_example_runs_to_its_end(
    block: Block,
    clean_environment: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    namespace: dict[str, object] = {"__name__": "doc_example"}
    with ScriptedOpenAIServer(script.respond) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        code = compile(block.code, block.name, "exec", dont_inherit=True)
        exec(code, namespace)
    assert _defined(block.code) <= namespace.keys()  # every statement ran
    assert bool(capsys.readouterr().out.strip()) == _prints(block.code)


@pytest.mark.parametrize(
    "block", [b for b in BLOCKS if b.mark is not None], ids=lambda block: block.name
)
def test_a_marked_example_says_who_runs_it(block: Block) -> None:
    """`tested-in` names an existing test file that reads this document; `not-run` says why."""
    assert block.detail, f"{block.name}: the mark needs a test file or a reason"
    if block.mark == "not-run":
        return
    tester = REPO / block.detail
    assert tester.is_file(), f"{block.name}: no test file {block.detail}"
    source = tester.read_text(encoding="utf-8")
    named = "README" if block.path.name == "README.md" else block.path.name
    assert named in source, f"{block.detail} does not read {block.path.name}"


def test_the_docs_have_examples() -> None:
    """The collection is not silently empty (a renamed folder, a changed fence)."""
    assert len(UNMARKED) >= 5
    assert {block.path.name for block in BLOCKS} >= {
        "README.md",
        "graph.md",
        "task-tools.md",
        "plan-documents.md",
        "testing.md",
    }


def test_the_readme_task_list_example_gives_the_same_list_run_again(
    clean_environment: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its list is shared through a folder that outlives the process: a second run of the
    example must not add the tasks again."""
    (code,) = python_blocks("Task tools")
    printed = []
    for _ in range(2):
        exec(compile(code, "README.md:task-tools", "exec", dont_inherit=True), {"__name__": "x"})
        printed.append(capsys.readouterr().out)
    assert printed[0] == printed[1]
    assert sum(line.startswith("#") for line in printed[0].splitlines()) == 2
