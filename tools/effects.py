"""What a tool says it does, in one vocabulary for every tool of a run (`ToolEffects`).

A tool declares its effects with `declare_effects(tool, ...)` (replan's own key in the tool's
`metadata`), or brings MCP tool annotations (`readOnlyHint`, `idempotentHint`,
`destructiveHint`, as MCP adapters copy them into `metadata`, at its top or under
`annotations`). `effects_of(tool)` reads either; a tool that declares nothing is taken to act
and not to be safe to retry, the cautious reading:

- `read_only`: it changes nothing (a look-up, a computation). Its earlier result may be reused,
  and a call of it cut short by a crash is made again.
- `retry_safe`: making the same call twice has the effect of making it once, given the same
  idempotency key (`replan.graphs.durable_calls.idempotency_key`). A call of it cut short by a
  crash is made again with that key; a call of a tool that is neither waits for a person.
- `destructive`: its effect cannot be undone (MCP's `destructiveHint`), told to reviewers.
- `sensitive`: the arguments whose value decides whom or what the action reaches (a recipient,
  an account): where a value came from matters there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.tools import BaseTool

from replan.tools.calculator import is_computing

EFFECTS_KEY = "replan_effects"
"""The `metadata` key of a tool where `declare_effects` keeps its declaration."""
MCP_ANNOTATIONS = "annotations"
"""Where MCP adapters may nest a tool's annotations inside its `metadata`."""


@dataclass(frozen=True)
class ToolEffects:
    """What calling a tool does (see the module docstring); the defaults are an undeclared
    tool's: it acts, it is not safe to retry."""

    read_only: bool = False
    retry_safe: bool = False
    destructive: bool = False
    sensitive: frozenset[str] = frozenset()

    @property
    def acts(self) -> bool:
        """Whether a call may change something outside the run."""
        return not self.read_only

    @property
    def may_repeat(self) -> bool:
        """Whether a call cut short by a crash may be made again without asking anyone."""
        return self.read_only or self.retry_safe


READ_ONLY = ToolEffects(read_only=True, retry_safe=True)


def declare_effects(
    tool: BaseTool,
    *,
    read_only: bool = False,
    retry_safe: bool = False,
    destructive: bool = False,
    sensitive: Iterable[str] = (),
) -> BaseTool:
    """Mark `tool` with what it does (it is returned, changed in place); a read-only tool is
    safe to retry. Raises ValueError for a sensitive argument the tool does not take."""
    unknown = sorted(set(sensitive) - set(tool.args))
    if unknown:
        raise ValueError(f"tool {tool.name!r} has no argument {', '.join(map(repr, unknown))}")
    tool.metadata = {
        **(tool.metadata or {}),
        EFFECTS_KEY: {
            "read_only": read_only,
            "retry_safe": retry_safe or read_only,
            "destructive": destructive,
            "sensitive": sorted(sensitive),
        },
    }
    return tool


def _hints(metadata: Mapping[str, Any]) -> Mapping[str, Any]:
    nested = metadata.get(MCP_ANNOTATIONS)
    return nested if isinstance(nested, Mapping) else metadata


def effects_of(tool: BaseTool) -> ToolEffects:
    """What `tool` declared (`declare_effects`, else MCP annotations); a computing tool
    (`replan.tools.calculator`) is read-only; anything else acts and is not safe to retry."""
    metadata: Mapping[str, Any] = tool.metadata or {}
    declared = metadata.get(EFFECTS_KEY)
    if isinstance(declared, Mapping):
        return ToolEffects(
            read_only=bool(declared.get("read_only")),
            retry_safe=bool(declared.get("retry_safe") or declared.get("read_only")),
            destructive=bool(declared.get("destructive")),
            sensitive=frozenset(declared.get("sensitive") or ()),
        )
    hints = _hints(metadata)
    if any(key in hints for key in ("readOnlyHint", "idempotentHint", "destructiveHint")):
        read_only = hints.get("readOnlyHint") is True
        return ToolEffects(
            read_only=read_only,
            retry_safe=read_only or hints.get("idempotentHint") is True,
            destructive=not read_only and hints.get("destructiveHint", True) is True,
        )
    return READ_ONLY if is_computing(tool) else ToolEffects()


def effects_by_name(tools: Iterable[BaseTool]) -> dict[str, ToolEffects]:
    """`effects_of` each of `tools`, by name."""
    return {tool.name: effects_of(tool) for tool in tools}
