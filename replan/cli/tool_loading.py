"""Load the caller's tools from a reference written as langgraph.json writes graph paths.

`load_tools("./my_tools.py:TOOLS")` runs that file as a module and takes its `TOOLS`;
`load_tools("my_package.tools:TOOLS")` imports the module (installed, or found from the current
folder) and takes the same. The name must hold a LangChain tool or a list (or tuple) of them,
checked as `build_plan_execute_graph(tools=...)` checks them. Whatever keeps the reference from
giving usable tools (no such file or module, a syntax error in it, an error raised while it is
imported, no such name, not tools, refused tool names) raises `ToolLoadingError`
(`ToolsNotFoundError` for no such file or module), whose message is one line naming the
reference and what was wrong (a file by its path with `..` resolved).

`replan run --tools REF` uses this; the run stores `stored_reference(REF)` (a file's absolute
path) with its settings so that `replan resume` loads the same tools from any folder.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from langchain_core.tools import BaseTool

from replan.cli.output import one_line
from replan.graphs.plan_execute import check_tools

FORMS = "PATH.py:NAME or package.module:NAME"
"""The two forms of a reference, as messages name them."""


class ToolLoadingError(ValueError):
    """A tools reference that does not give usable tools; the message is one line."""


class ToolsNotFoundError(ToolLoadingError):
    """The file or module a tools reference names is not there."""


def split_reference(reference: str) -> tuple[str, str, bool]:
    """(where, name, is_file) of `PATH.py:NAME` or `package.module:NAME`."""
    where, colon, name = reference.rpartition(":")
    if not colon or not where or not name.isidentifier():
        raise ToolLoadingError(f"--tools {reference}: expected {FORMS}")
    is_file = where.endswith(".py") or "/" in where or "\\" in where
    if not is_file and not all(part.isidentifier() for part in where.split(".")):
        raise ToolLoadingError(f"--tools {reference}: {where!r} is not a file (.py) or a module")
    return where, name, is_file


def stored_reference(reference: str, base: Path | None = None) -> str:
    """`reference` as a run stores it: a file's path made absolute (from `base`, default the
    current folder), a module's as given."""
    where, name, is_file = split_reference(reference)
    if not is_file:
        return reference
    return f"{((base or Path.cwd()) / where).resolve()}:{name}"


def _module_from_file(reference: str, path: Path) -> ModuleType:
    if not path.is_file():
        raise ToolsNotFoundError(f"--tools {reference}: no file {path}")
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    module_name = f"replan_user_tools_{path.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ToolLoadingError(f"--tools {reference}: {path} cannot be loaded as Python")
    module = importlib.util.module_from_spec(spec)
    folder = str(path.resolve().parent)
    if folder not in sys.path:  # the file may import its neighbours, as a script would
        sys.path.append(folder)
    sys.modules[module_name] = module  # pydantic and dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        del sys.modules[module_name]
        raise ToolLoadingError(
            f"--tools {reference}: {path} line {exc.lineno}: SyntaxError: {one_line(exc.msg)}"
        ) from None
    except Exception as exc:
        del sys.modules[module_name]
        raise ToolLoadingError(
            f"--tools {reference}: importing {path} failed: "
            f"{type(exc).__name__}: {one_line(str(exc))}"
        ) from None
    return module


def _module(reference: str, name: str) -> ModuleType:
    cwd = str(Path.cwd())
    if cwd not in sys.path:  # `package.module` in the current folder, as `python -m` finds it
        sys.path.append(cwd)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(f"{exc.name}.")):
            raise ToolsNotFoundError(f"--tools {reference}: no module named {name}") from None
        raise ToolLoadingError(
            f"--tools {reference}: importing {name} failed: ModuleNotFoundError: {exc}"
        ) from None
    except SyntaxError as exc:
        raise ToolLoadingError(
            f"--tools {reference}: {exc.filename} line {exc.lineno}: SyntaxError: "
            f"{one_line(exc.msg)}"
        ) from None
    except Exception as exc:
        raise ToolLoadingError(
            f"--tools {reference}: importing {name} failed: "
            f"{type(exc).__name__}: {one_line(str(exc))}"
        ) from None


def _as_tools(reference: str, name: str, value: Any) -> list[BaseTool]:
    items = [value] if isinstance(value, BaseTool) else value
    if not isinstance(items, list | tuple):
        raise ToolLoadingError(
            f"--tools {reference}: {name} is a {type(value).__name__}, not a LangChain tool or "
            "a list of them (wrap a function with langchain_core.tools.tool)"
        )
    try:
        return check_tools(items)
    except (TypeError, ValueError) as exc:
        raise ToolLoadingError(f"--tools {reference}: {one_line(str(exc))}") from None


def load_tools(reference: str, base: Path | None = None) -> list[BaseTool]:
    """The tools `reference` names (see the module docstring); a file path is taken from
    `base` (default: the current folder). Raises `ToolLoadingError`."""
    where, name, is_file = split_reference(reference)
    if is_file:
        path = Path(os.path.normpath((base or Path.cwd()) / where))  # shown without `..`
        module = _module_from_file(reference, path)
    else:
        module = _module(reference, where)
    if not hasattr(module, name):
        shown = path if is_file else where
        raise ToolLoadingError(f"--tools {reference}: {shown} has no {name}")
    return _as_tools(reference, name, getattr(module, name))
