"""The distribution installs one `replan` namespace, and users' own modules cannot shadow it."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from tests.support.dev_server import REPO, copy_repo

pytestmark = pytest.mark.slow  # builds and installs wheels, runs subprocesses

LAYERS = ("graphs", "tools", "state")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built offline, with the installed setuptools, from a copy of the working tree
    as a fresh clone has it (a `build/` folder left in the tree would leak stale files)."""
    out = tmp_path_factory.mktemp("wheel")
    source = copy_repo(out / "source")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
        + ["-w", str(out), str(source)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("replan-*.whl")
    return built


def test_the_server_extra_is_refused_rather_than_empty_on_an_older_python(wheel: Path) -> None:
    """No marker leaves Aegra out of `replan[server]` on Python 3.11: pip must refuse the extra
    there (Aegra's Requires-Python), not install it without the server."""
    with zipfile.ZipFile(wheel) as built:
        (metadata,) = [n for n in built.namelist() if n.endswith(".dist-info/METADATA")]
        lines = built.read(metadata).decode().splitlines()
    server = [line for line in lines if line.startswith("Requires-Dist:") and '"server"' in line]
    assert any(line.startswith("Requires-Dist: aegra-api") for line in server)
    assert [line for line in server if "python_version" in line] == []


def test_the_wheel_installs_only_the_replan_namespace(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top == {"replan"}
    for layer in LAYERS:
        assert f"replan/{layer}/__init__.py" in names
    assert "replan/cli/commands.py" in names
    assert "replan/graphs/nodes/executor.py" in names
    assert "replan/state/plans/storage.py" in names


def test_the_wheel_works_from_a_plain_install(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    script = (
        "import replan, replan.graphs.plan_execute as pe;"
        "print(replan.build_plan_execute_graph is pe.build_plan_execute_graph,"
        f" replan.__file__.startswith({str(target)!r}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env={"PYTHONPATH": str(target), "PATH": ""},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]


def test_ci_s_lowest_versions_are_the_lower_bounds_of_pyproject() -> None:
    """.ci/lowest.txt pins each dependency of replan, and of the extras the `dev` extra brings,
    to its lower bound in pyproject.toml: CI's second stage tests exactly those versions."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    (own,) = [r for r in map(Requirement, extras["dev"]) if r.name == "replan"]
    requirements = [*project["dependencies"], *(r for e in sorted(own.extras) for r in extras[e])]
    bounds = {
        r.name: Version(s.version)
        for r in map(Requirement, requirements)
        for s in r.specifier
        if s.operator == ">="
    }
    lines = (REPO / ".ci" / "lowest.txt").read_text().splitlines()
    pins = [line.split("==") for line in lines if line and not line.startswith("#")]
    assert {name: Version(version) for name, version in pins} == bounds


def test_users_own_tools_and_state_modules_do_not_shadow_replan(tmp_path: Path) -> None:
    for name in ("tools", "state", "graphs"):
        (tmp_path / f"{name}.py").write_text("raise RuntimeError('the user module was imported')\n")
    (tmp_path / "app.py").write_text(
        "from replan.tools import task_tools\n"
        "from replan.state import TaskContext\n"
        "from replan.graphs.plan_execute import build_plan_execute_graph\n"
        "print(len(task_tools()), type(TaskContext()).__name__)\n"
    )
    done = subprocess.run(
        [sys.executable, "app.py"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["4", "TaskContext"]


def test_the_state_layer_imports_without_langgraph() -> None:
    code = (
        "import sys, replan.state, replan.state.plans;"
        "print(sorted(m for m in sys.modules"
        " if m.split('.')[0] in ('langgraph', 'langchain_core')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


WITHOUT_LANGCHAIN = """
import importlib.abc, sys

class NoLangchain(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "langchain" or name.startswith("langchain."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoLangchain())

import replan, replan.tools
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.tools import ReactTasksState, TasksState, plan_tools, task_tools

build_plan_execute_graph()
print(len(replan.task_tools()), len(plan_tools()), replan.TasksState is TasksState)
try:
    replan.TaskToolsMiddleware
except ImportError as error:
    print("refused:", error)
print(sorted(m for m in sys.modules if m.split(".")[0] == "langchain"))
"""


def test_the_core_package_imports_without_the_optional_langchain() -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_LANGCHAIN], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    counts, refused, loaded = done.stdout.splitlines()
    assert counts == "4 8 True"
    assert refused == (
        "refused: replan's middleware for create_agent (TaskToolsMiddleware, "
        'TextCallRecoveryMiddleware) needs the langchain package: pip install "replan[agents]"'
    )
    assert loaded == "[]"


def test_the_middleware_is_part_of_the_lazy_surface() -> None:
    import replan
    import replan.tools
    from replan.tools.task_middleware import TaskToolsMiddleware

    assert replan.TaskToolsMiddleware is replan.tools.TaskToolsMiddleware is TaskToolsMiddleware
    assert "TaskToolsMiddleware" in dir(replan) and "TaskToolsMiddleware" in replan.__all__


def test_replan_imports_where_there_is_no_fcntl(tmp_path: Path) -> None:
    """As on Windows: everything imports and the in-state tools work; only the file-backed
    stores (POSIX file locks) refuse, with a message saying what to use instead."""
    code = f"""
import sys
sys.modules["fcntl"] = None  # `import fcntl` now fails, as it does on Windows
from replan import build_plan_execute_graph, task_tools
from replan.state import FileTaskStore, TaskContext, TaskStoreUnavailableError
from replan.state.plans import FilesystemPlanStorage, PlanStorageError, PlanUpdate
from replan.state.plans import SqlitePlanStorage

build_plan_execute_graph()
TaskContext().create("works without locks")
print(len(task_tools()), SqlitePlanStorage({str(tmp_path / "plans.db")!r}).upsert(
    PlanUpdate(name="p", content="body")).revision)
try:
    FileTaskStore({str(tmp_path / "tasks")!r}).read()
except TaskStoreUnavailableError as error:
    print(error)
try:
    FilesystemPlanStorage({str(tmp_path / "plans")!r}).upsert(PlanUpdate(name="p", content="x"))
except PlanStorageError as error:
    print(error)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    counts, task_store, plan_store = done.stdout.splitlines()
    assert counts == "4 1"
    assert "cannot be used (file-backed stores need POSIX file locks" in task_store
    assert "POSIX file locks" in plan_store and "SqlitePlanStorage" in plan_store


RUN_AS_INSTALLED = """
import runpy, site, sys

script_folder, site_folder, dependencies, script = sys.argv[1:]
sys.path[0] = script_folder  # as `python script.py` run in the folder that holds the clone
site.addsitedir(site_folder)  # the editable install's .pth files run, in name order
sys.path.append(dependencies)  # langchain-core, pydantic... (its .pth files do not run)
runpy.run_path(script, run_name="__main__")
"""
SCRIPT = """
from replan import TaskContext
import replan, replan.graphs.plan_execute
print(type(TaskContext()).__name__, replan.__file__)
"""


def _editable_install(source: Path, site_folder: Path) -> None:
    """Install `source` in editable mode into `site_folder`, as pip would: the editable wheel
    from the project's build backend, unpacked (its .pth files run with `site.addsitedir`)."""
    wheels = site_folder.parent / "wheels"
    wheels.mkdir()
    build = (
        "import sys; sys.path.insert(0, 'build_backend'); import replan_build;"
        f"print(replan_build.build_editable({str(wheels)!r}))"
    )
    built = subprocess.run(
        [sys.executable, "-c", build], cwd=source, capture_output=True, text=True, check=False
    )
    assert built.returncode == 0, built.stderr
    zipfile.ZipFile(wheels / built.stdout.split()[-1]).extractall(site_folder)


def test_a_script_beside_a_clone_named_replan_imports_the_installed_package(
    tmp_path: Path,
) -> None:
    """The clone folder `replan` beside the script is a namespace package to Python; setuptools'
    editable finder comes after it (pypa/setuptools#3557), unless the build backend's
    `_replan_editable_first` puts it first."""
    clone = copy_repo(tmp_path / "parent" / "replan")
    site_folder = tmp_path / "site"
    _editable_install(clone, site_folder)
    (tmp_path / "parent" / "script.py").write_text(SCRIPT)
    (tmp_path / "run_as_installed.py").write_text(RUN_AS_INSTALLED)
    dependencies = sysconfig.get_paths()["purelib"]

    def run_script() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-S", str(tmp_path / "run_as_installed.py")]
            + [str(tmp_path / "parent"), str(site_folder), dependencies, "script.py"],
            cwd=tmp_path / "parent",
            capture_output=True,
            text=True,
            check=False,
        )

    done = run_script()
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["TaskContext", str(clone / "replan" / "__init__.py")]
    (site_folder / "_replan_editable_first.pth").unlink()  # setuptools' editable install alone
    trapped = run_script()
    assert "cannot import name 'TaskContext' from 'replan' (unknown location)" in trapped.stderr
