"""Keep a folder named `replan` on sys.path (a clone of replan, seen from the folder that holds
it) from hiding an editable install of replan. An editable install runs this at start-up; see
replan_build.py in replan's repository.

Python takes such a folder for a namespace package `replan`, and setuptools' editable finder,
which comes after Python's path-based finder, is never asked. The finder inserted here, just
before the path-based one, steps in only then: when the path-based finder would make `replan`
a namespace package, it asks replan's editable finders instead. A regular `replan` package
found on sys.path (say, a wheel on PYTHONPATH) is left to the path-based finder, as before.
"""

from __future__ import annotations

import sys
from importlib.machinery import ModuleSpec, PathFinder

EDITABLE_FINDERS = "__editable___replan_"
"""How the modules of setuptools' editable finders for replan are named."""


class ReplanBeforeNamespaces:
    """A meta path finder for `replan` only (see the module docstring)."""

    @classmethod
    def find_spec(
        cls, fullname: str, path: object = None, target: object = None
    ) -> ModuleSpec | None:
        if fullname != "replan":
            return None
        found = PathFinder.find_spec(fullname, path)
        if found is None or found.origin is not None:  # none, or a regular package or module
            return None
        for finder in sys.meta_path:
            if str(getattr(finder, "__module__", "")).startswith(EDITABLE_FINDERS):
                spec: ModuleSpec | None = finder.find_spec(fullname, path, target)
                if spec is not None:
                    return spec
        return None


def install() -> None:
    """Put `ReplanBeforeNamespaces` just before the path-based finder (once)."""
    if PathFinder in sys.meta_path and ReplanBeforeNamespaces not in sys.meta_path:
        sys.meta_path.insert(sys.meta_path.index(PathFinder), ReplanBeforeNamespaces)


install()
