"""The layout keeps its promises: no import circle (imports inside functions count), a state
layer without LangGraph, short modules that say their job, no private parts of other
libraries."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from replan.state.tasks import Task, TaskContext
from replan.tools.task_tools import TaskCallChange

REPO = Path(__file__).resolve().parents[1]
LAYERS = {"replan": "replan", "graphs": "replan.graphs", "state": "replan.state",
          "tools": "replan.tools"}  # fmt: skip
MAX_MODULE_LINES = 400
PRIVATE_USES = re.compile(
    r"langgraph\._internal|_get_request_payload|openai\._base_client|__mro__|vars\(graph"
)


def _module(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    parts[0] = LAYERS[parts[0]]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for folder in LAYERS for p in sorted((REPO / folder).rglob("*.py"))}


def _imports(name: str, path: Path) -> set[str]:
    """The project modules `name` imports anywhere in its code."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            wanted = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1],
                                 *([base] if base else [])])  # fmt: skip
            wanted = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in wanted:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
                break
    return found


def test_no_module_imports_itself_back() -> None:
    graph = {name: _imports(name, path) for name, path in MODULES.items()}
    done: set[str] = set()

    def visit(name: str, trail: list[str]) -> None:
        if name in trail:
            pytest.fail("import circle: " + " -> ".join([*trail[trail.index(name) :], name]))
        if name in done:
            return
        for target in sorted(graph[name]):
            visit(target, [*trail, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])


def test_the_state_layer_imports_no_langgraph_or_langchain() -> None:
    for name, path in MODULES.items():
        if name.startswith("replan.state"):
            text = path.read_text(encoding="utf-8")
            assert not re.search(r"^\s*(from|import) lang(graph|chain)", text, re.M), name


@pytest.mark.parametrize("name", sorted(MODULES))
def test_a_module_is_short_and_opens_with_what_it_is_for(name: str) -> None:
    text = MODULES[name].read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_MODULE_LINES, f"{name} is over {MAX_MODULE_LINES} lines"
    assert ast.get_docstring(ast.parse(text)), f"{name} has no docstring"
    if not name.startswith("replan.testing"):
        assert not PRIVATE_USES.search(text), f"{name} uses another library's private parts"


def test_the_classes_checkpoints_name_stay_where_saved_checkpoints_find_them() -> None:
    """Checkpoints store these by module path (msgpack): a split must leave them in place."""
    assert {cls.__module__ for cls in (Task, TaskContext)} == {"replan.state.tasks"}
    assert TaskCallChange.__module__ == "replan.tools.task_tools"
