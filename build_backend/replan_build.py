"""replan's build backend: setuptools' own, with one addition to editable installs.

`pip install -e .` (setuptools' default editable mode) makes `replan` importable through an
import finder that setuptools appends to the end of `sys.meta_path`, after Python's path-based
finder (pypa/setuptools#3557). A script run from the folder that holds a clone named `replan`
has that folder on `sys.path`, where the clone itself looks like a namespace package `replan`:
the path-based finder returns it first, and `from replan import TaskContext` fails with
"cannot import name 'TaskContext' from 'replan' (unknown location)".

The editable wheel built here also installs `_replan_editable_first.py` and a `.pth` file that
imports it at start-up: it adds a finder, just before the path-based one, that asks replan's
editable finders whenever `replan` would otherwise be such a namespace package, so `replan` is
the installed package wherever a script runs (a regular `replan` found on sys.path still comes
first, as before). Regular wheels and sdists are setuptools' own, unchanged.

Why code at start-up, not a `.pth` line that only names a folder: the path-based finder returns
the first regular package `replan` (a folder with `__init__.py`) anywhere on sys.path, folders
without one found before it being mere namespace portions, so a named folder holding a regular
`replan` does beat the clone; but a regular package's submodules are looked for in its own
folder only (its `__path__`), and the layer folders are not in `replan/`. So setuptools'
`editable_mode=compat` (the project folder named) finds no `replan.state` at all, and
`editable_mode=strict` (a tree of links to each file, the layers inside its `replan/`) serves
the clone's parent but not the project folder itself (`python -m pytest` there), where the
working tree's `replan/` comes first and wins without the layers; it would need
`replan/__init__.py` to add them to its own `__path__`, and its links miss every module added
after the install. Only a finder on sys.meta_path maps `replan.graphs` to `graphs/` wherever
a script runs, and an installed distribution adds one only with code run at start-up, as
setuptools' own editable install does for its finder (`__editable__.replan-*.pth`).
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403 (the other hooks, as setuptools has them)

FIRST_MODULE = "_replan_editable_first"
FIRST_SOURCE = Path(__file__).with_name(f"{FIRST_MODULE}.py")
"""The module, kept beside this file."""
FIRST_PTH = f"import {FIRST_MODULE}\n"
"""A `.pth` line starting with `import` is run at start-up."""


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def add_files(wheel: Path, files: dict[str, bytes]) -> None:
    """Add `files` (name in the wheel: content) to `wheel`, and to its RECORD."""
    with zipfile.ZipFile(wheel) as source:
        entries = [(info, source.read(info)) for info in source.infolist()]
    record = next(info for info, _ in entries if info.filename.endswith(".dist-info/RECORD"))
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as target:
        for name, content in files.items():
            target.writestr(name, content)
        for info, data in entries:
            if info is record:
                lines = [line for line in data.decode().splitlines() if line]
                lines[-1:-1] = [_record_line(name, content) for name, content in files.items()]
                data = ("\n".join(lines) + "\n").encode()
            target.writestr(info, data)


def build_editable(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    """setuptools' editable wheel, plus the module and `.pth` that keep a folder named
    `replan` from hiding it."""
    name: str = _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
    add_files(
        Path(wheel_directory) / name,
        {
            f"{FIRST_MODULE}.py": FIRST_SOURCE.read_bytes(),
            f"{FIRST_MODULE}.pth": FIRST_PTH.encode(),
        },
    )
    return name
