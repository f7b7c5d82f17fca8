"""What every Phase 2 analyzer sees and what it returns.

An analyzer is a small class with one job: it reads one trace (with the task
and the baseline entry beside it) and returns sightings. A sighting is a bug
observed once, in one trace, with the step numbers that show it and the steps
whose cost is the waste; `costing` prices those steps and `aggregate` merges
the sightings of many traces into one bug per defect.

Analyzers never call a model and never touch the network, so evaluating a run
is fast, repeatable, and gives the same bug report twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Protocol

import orjson
from pydantic import JsonValue

from mcpipechekr._util.tokens import estimate_tokens
from mcpipechekr.artifacts.baseline import BaselineEntry
from mcpipechekr.artifacts.bug_report import BugSeverity, BugType, FixableBy, bug_id
from mcpipechekr.artifacts.trace import ModelTurn, ToolCall, Trace
from mcpipechekr.evaluate.turns import Request, requests_of
from mcpipechekr.tasks import Task


@dataclass(frozen=True)
class Budgets:
    """Response budgets of the check layer, in estimated tokens."""

    default: int = 4000
    per_tool: dict[str, int] = field(default_factory=dict)

    def for_tool(self, tool: str) -> int:
        return self.per_tool.get(tool, self.default)


@dataclass
class TraceContext:
    """One trace with everything known about its task."""

    trace: Trace
    trace_ref: str
    """The trace file relative to the run folder, e.g. `traces/x__demo__r001.json`."""
    task: Task | None = None
    baseline: BaselineEntry | None = None
    budgets: Budgets = field(default_factory=Budgets)

    @cached_property
    def calls(self) -> list[ToolCall]:
        return [step for step in self.trace.steps if isinstance(step, ToolCall)]

    @cached_property
    def call_tokens(self) -> dict[int, int]:
        """`call_cost` of every call by step index, worked out once: analyzers and pricing share it."""
        return {call.index: call_cost(call) for call in self.calls}

    @cached_property
    def requests(self) -> list[Request]:
        """The trace's model requests (`turns.requests_of`): what pricing a wasted call's turns needs."""
        return requests_of(self.trace)

    @cached_property
    def min_calls(self) -> int | None:
        """The known minimum: the task's min_calls, else its reference calls, else the baseline's calls;
        the baseline's calls also when fewer (rebuilt after the server's tools changed, it found a
        cheaper way than the task's reference calls). A failed baseline entry (score 0) counts for nothing.
        """
        declared = None
        if self.task is not None and self.task.min_calls:
            declared = self.task.min_calls
        elif self.task is not None and self.task.reference_calls:
            declared = len(self.task.reference_calls)
        entry = self.baseline
        seen = entry.calls if entry is not None and entry.calls and entry.plausibility_score > 0 else None
        if declared is None or seen is None:
            return declared or seen
        return min(declared, seen)

    def texts_after(self, index: int) -> list[str]:
        """Everything the agent wrote after step `index`: model text, tool arguments, the final answer."""
        out: list[str] = []
        for step in self.trace.steps[index + 1 :]:
            if isinstance(step, ModelTurn):
                out.append(step.text)
                out.extend(step.thinking)
            else:
                out.append(orjson.dumps(step.arguments, default=str).decode())
        if self.trace.final_answer:
            out.append(self.trace.final_answer)
        return out


@dataclass
class BugSighting:
    """One bug seen once in one trace; `steps` show it, `wasted` are the steps whose cost is the gap."""

    type: BugType
    slug: tuple[str, ...]
    severity: BugSeverity
    trigger: str
    observed: str
    expected: str
    acceptance_criteria: list[str]
    steps: list[int]
    tool: str | None = None
    wasted: list[int] = field(default_factory=list)
    optimal_tokens: int | None = None
    """Estimated tokens the optimal sequence needs for this part; None: the cheapest wasted-free step."""
    observed_tokens: int | None = None
    """Set when the analyzer prices the observation itself (e.g. an oversized result)."""
    extra_calls: int | None = None
    """How many of the `wasted` calls the optimum would not make, when the analyzer cannot say which
    (call_count: every call, some fewer needed); None: all of them."""
    details: dict[str, JsonValue] = field(default_factory=dict)
    analyzer: str = ""
    fixable_by: FixableBy = "server"
    """`agent` when no change to the server can remove it (see `Bug.fixable_by`)."""
    expected_tool: str | None = None
    """The tool that should have been used instead of `tool`, when another one should have."""
    priced_steps: list[int] | None = None
    """The calls an analyzer-priced observation covers, when not its `steps` (a wrong answer: every call)."""
    explained_tokens: int = 0
    """Gap that other sightings of the trace already price (a summary's share of them; `assign_steps`)."""
    see_also: list[str] = field(default_factory=list)
    """Ids of the sightings that own (and price) steps this one also saw (`aggregate.assign_steps`)."""

    @property
    def id(self) -> str:
        return bug_id(self.type, *self.slug)


class Analyzer(Protocol):
    """One rule over one trace."""

    name: ClassVar[str]

    def analyze(self, ctx: TraceContext) -> list[BugSighting]: ...


def call_cost(call: ToolCall) -> int:
    """Estimated tokens of one call as the agent pays for it: its arguments plus its result."""
    return estimate_tokens(call.arguments) + call.result_tokens_estimated


def result_json(call: ToolCall) -> Any:
    """The call's result as data: structured content, else the JSON of its text block, else None.

    Several text blocks that are each JSON (a list sent one item per block, as the SDK
    does) read as the list of them, whichever client recorded them.
    """
    if call.structured_content is not None:
        return call.structured_content
    texts = [block.get("text") for block in call.result_content if block.get("type") == "text"]
    if not texts or not all(isinstance(text, str) for text in texts):
        return None
    try:
        values = [orjson.loads(text) for text in texts]
    except orjson.JSONDecodeError:
        return None
    if len(values) == 1:
        return values[0]
    return values if all(isinstance(value, dict | list) for value in values) else None


def result_is_empty(call: ToolCall) -> bool:
    """A successful call that found nothing: a zero count/total, or only empty lists.

    Used to tell a search (an empty window, then the next) from a comparison.
    """
    if call.is_error:
        return False
    data = result_json(call)
    if isinstance(data, list):
        return not data
    if not isinstance(data, dict):
        return False
    for key in ("count", "total", "total_count"):
        value = data.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value == 0
    lists = [value for value in data.values() if isinstance(value, list)]
    return bool(lists) and all(not value for value in lists)


def records_of(data: Any) -> list[dict[str, Any]]:
    """The records a result lists: a list of objects, or the one list of objects inside an object."""
    if isinstance(data, list):
        return [item for item in data if isinstance(item, dict)]
    if isinstance(data, dict):
        lists = [value for value in data.values() if isinstance(value, list) and value]
        object_lists = [value for value in lists if all(isinstance(item, dict) for item in value)]
        if len(object_lists) == 1:
            return object_lists[0]
    return []
