"""Put replan's editable finders ahead of Python's path-based finder, so that a folder named
`replan` on sys.path (the clone itself, seen from the folder that holds it) does not hide the
installed package. An editable install runs this at start-up; see replan_build.py in replan's
repository."""

import sys
from importlib.machinery import PathFinder


def _move_first() -> None:
    if PathFinder not in sys.meta_path:
        return
    editable = [
        finder
        for finder in sys.meta_path
        if str(getattr(finder, "__module__", "")).startswith("__editable___replan_")
    ]
    for finder in editable:
        sys.meta_path.remove(finder)
        sys.meta_path.insert(sys.meta_path.index(PathFinder), finder)


_move_first()
