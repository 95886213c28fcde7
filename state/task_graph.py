"""Cycles in the dependency graph of a task list, whose edges run from a blocker to the tasks it
blocks (`Task.blocks`): in a whole list (`find_cycle`), or closed by new edges
(`cycle_through`). Both walks are iterative: linear in tasks plus edges, safe for very long
chains."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Protocol


class Linked(Protocol):
    """A task as the walks see it: its ID and the IDs of the tasks waiting for it."""

    @property
    def id(self) -> str: ...

    @property
    def blocks(self) -> Sequence[str]: ...


def find_cycle(
    tasks: Iterable[Linked], extra_edges: Iterable[tuple[str, str]] = ()
) -> list[str] | None:
    """A dependency cycle as a closed path of IDs (first == last), or None if there is none.

    Edges run from blocker to blocked (`task.blocks`), plus `extra_edges`. Iterative
    depth-first search: linear in tasks plus edges, and safe for very long chains.
    """
    successors: dict[str, list[str]] = {}
    for task in tasks:
        successors.setdefault(task.id, []).extend(task.blocks)
    for blocker, blocked in extra_edges:
        successors.setdefault(blocker, []).append(blocked)

    unvisited, on_path, done = 0, 1, 2
    colour: dict[str, int] = {}
    for root in successors:
        if colour.get(root, unvisited) != unvisited:
            continue
        path = [root]
        iterators = [iter(successors.get(root, ()))]
        colour[root] = on_path
        while iterators:
            step = next(iterators[-1], None)
            if step is None:
                colour[path.pop()] = done
                iterators.pop()
                continue
            state = colour.get(step, unvisited)
            if state == on_path:
                return [*path[path.index(step) :], step]
            if state == unvisited:
                colour[step] = on_path
                path.append(step)
                iterators.append(iter(successors.get(step, ())))
    return None


def cycle_through(
    edges: Sequence[tuple[str, str]], successors: Callable[[str], Sequence[str]]
) -> list[str] | None:
    """A cycle that adding `edges` (blocker, blocked) to a graph without one would close, as a
    closed path of IDs, or None; `successors(id)` gives the graph's edges out of a task.

    Any new cycle runs through a new edge: it exists when an edge's blocker is reachable from
    its blocked task. Only that part of the graph is walked.
    """
    extra: dict[str, list[str]] = {}
    for blocker, blocked in edges:
        extra.setdefault(blocker, []).append(blocked)
    for blocker, blocked in edges:
        parents: dict[str, str | None] = {blocked: None}
        stack = [blocked]
        while stack:
            node = stack.pop()
            if node == blocker:
                path = [node]
                while (parent := parents[path[-1]]) is not None:
                    path.append(parent)
                return [blocker, *reversed(path)]
            for step in [*successors(node), *extra.get(node, ())]:
                if step not in parents:
                    parents[step] = node
                    stack.append(step)
    return None
