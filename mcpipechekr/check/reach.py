"""What synthesis tried on each tool and how it went: the record the layers and the report read.

A module of its own, below the strategies that fill it (check/synthesis.py),
so that `CheckContext` can hold each tool's reach (`ctx.coverage`) and the
honesty checks can read it without importing the code that calls the tools.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import mcp_types
import orjson

from mcpipechekr.artifacts.check_report import Coverage, ToolCoverage
from mcpipechekr.check.answers import one_line

MINIMAL = "minimal"
"""The source label of the minimal value of a parameter (check/argsgen.py)."""


@dataclass(frozen=True)
class Candidate:
    """One argument set to try, with where each value came from."""

    arguments: dict[str, Any]
    sources: dict[str, str]
    """Parameter → source label (`schema enum`, `result of list_items`, `server command line`, …)."""
    origin: str = "generated"
    """`generated`, or the id of the case whose arguments these are."""

    def describe(self) -> str:
        """`item_id from the result of list_items, format from the schema enum`, or the case."""
        if self.origin != "generated":
            return f"the arguments of case {self.origin!r}"
        if not self.arguments:
            return "no arguments"
        telling = {name: label for name, label in self.sources.items() if label != MINIMAL}
        if not telling:
            return "minimal generated arguments"
        return ", ".join(f"{name} from {_the(label)}" for name, label in telling.items())

    def key(self) -> bytes:
        return orjson.dumps(self.arguments, option=orjson.OPT_SORT_KEYS, default=str)


def _the(label: str) -> str:
    return label if label.startswith(("the ", "a ", "an ")) else f"the {label}"


Outcome = Literal["reached", "refused", "failed", "needs_network"]


@dataclass
class Attempt:
    """One call of a tool with one candidate, and how it went."""

    candidate: Candidate
    outcome: Outcome
    message: str
    ms: float
    result: mcp_types.CallToolResult | None = None
    mismatch: str | None = None
    """The client's complaint about structuredContent that does not match the outputSchema (PC-11)."""
    halted: bool = False


@dataclass
class ToolReach:
    """What synthesis got from one tool: its attempts and the one that decided."""

    tool: mcp_types.Tool
    status: Literal["reached", "not_reached", "failed", "needs_network", "no_arguments", "not_called"]
    reason: str = ""
    """Why it was not called, or the last refusal, failure or network error."""
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def decisive(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None

    @property
    def halted(self) -> bool:
        return any(attempt.halted for attempt in self.attempts)


def attempts_detail(reach: ToolReach) -> list[dict[str, Any]]:
    """The attempts as JSON for a report's details: arguments, where they came from, and how it went."""
    return [
        {
            "arguments": attempt.candidate.arguments,
            "sources": attempt.candidate.sources,
            "outcome": attempt.outcome,
            "message": one_line(attempt.message),
        }
        for attempt in reach.attempts
    ]


def coverage_of(reaches: dict[str, ToolReach], tools: list[mcp_types.Tool]) -> Coverage | None:
    """The report's coverage section: per tool check may call, reached or not, with what or why not."""
    if not reaches:
        return None
    entries: list[ToolCoverage] = []
    for tool in tools:
        reach = reaches.get(tool.name)
        if reach is None or (
            reach.status == "not_called" and not reach.attempts and reach.reason.startswith("not called:")
        ):
            continue  # a tool check may not call is outside the figure
        decisive = reach.decisive
        entries.append(
            ToolCoverage(
                tool=tool.name,
                status=reach.status,
                calls=len(reach.attempts),
                arguments=decisive.candidate.arguments if decisive is not None else None,
                sources=decisive.candidate.sources if decisive is not None else {},
                error=None if reach.status == "reached" else one_line(reach.reason) or None,
            )
        )
    return Coverage(
        callable_tools=len(entries),
        reached=sum(1 for entry in entries if entry.status == "reached"),
        tools=entries,
    )
