"""Which bugs a description caused, and the trace steps that show it.

A bug gets a suggestion only when the evidence says a text misled the agent
and names the text to change:

- `wrong_tool` / `late_tool` (Phase 2's `description` bugs from
  `evaluate/wrong_tool.py`): the task's right tool (`expected_tool`) and the
  tool the agent took instead are both in the run's tools.json;
- `unused_parameter`: a walk (`date_windows`, `pagination`) on a tool that
  already has a parameter ordering its results, which no call of the walk
  set; or unread result fields (`unread_fields`) on a tool that already has a
  parameter choosing the fields, which no call set. Without such a parameter
  the bug is a missing feature, not a description, and gets none;
- `parameter_values`: a call refused, then the same call with other values
  accepted (`error_workaround`'s low bug with `details.corrected_input`): the
  parameter's description did not say what it accepts.

Everything else is skipped with its reason: how the agent behaved
(`fixable_by: agent`), a defect of the server's code, a missing feature.
Parameters are told apart by general English words of their names and enum
values (`ORDER_WORDS`, `FIELD_WORDS`), never by one server's names.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpipechekr.artifacts.bug_report import Bug
from mcpipechekr.artifacts.description_suggestions import StepQuote, SuggestionKind
from mcpipechekr.artifacts.tools_snapshot import ToolDefinition
from mcpipechekr.artifacts.trace import ModelTurn, ToolCall, Trace, read_trace
from mcpipechekr.errors import UserError
from mcpipechekr.evaluate.base import records_of, result_json
from mcpipechekr.lint._text import schema_properties
from mcpipechekr.lint.lexical import terms

ORDER_WORDS = frozenset(terms("sort sorted order ordering orderby direction"))
"""Words of a parameter's name that make it an ordering of the results."""
LATEST_WORDS = frozenset(terms("desc descending newest latest recent recently last"))
EARLIEST_WORDS = frozenset(terms("asc ascending oldest earliest first"))
"""Words of an enum value, or of a task's prompt, for the two ends of a date order."""
FIELD_WORDS = frozenset(terms("field fields select column columns projection include properties attributes"))
"""Words of a parameter's name that make it a choice of the result's fields."""
MAX_TRACES = 3
"""Traces quoted per bug."""
MAX_QUOTES = 8
"""Steps quoted per bug."""
SAID_CHARS = 160
CALL_CHARS = 160


@dataclass
class Case:
    """A bug a description caused: which text to change, and the facts a rewrite is built from."""

    bug: Bug
    kind: SuggestionKind
    tool: str
    parameter: str | None = None
    misled: str | None = None
    """The tool the agent took instead of `tool` (wrong or late tool)."""
    facts: dict[str, Any] = field(default_factory=dict)
    quotes: list[StepQuote] = field(default_factory=list)


@dataclass
class Traces:
    """The run's traces, each read once, by their path relative to the run folder."""

    root: Path
    _read: dict[str, Trace | None] = field(default_factory=dict)

    def get(self, ref: str) -> Trace | None:
        if ref not in self._read:
            try:
                self._read[ref] = read_trace(self.root / ref)
            except (OSError, UserError):
                self._read[ref] = None
        return self._read[ref]


def classify(bug: Bug, tools: dict[str, ToolDefinition], traces: Traces) -> Case | str:
    """The case a suggestion is built for, or the reason the bug gets none."""
    if bug.fixable_by == "agent":
        return (
            "how the agent behaved (fixable by the agent, not the server): no description change removes it"
        )
    if bug.tool is not None and bug.tool not in tools:
        return f"`{bug.tool}` is not in the run's tools.json"
    for build in _BUILDERS:
        found = build(bug, tools, traces)
        if found is not None:
            return found
    if bug.details.get("corrected_input"):
        return "the agent corrected its own input, but no argument it changed is in the tool's schema"
    if bug.type == "bug":
        return "a defect of the server's code: no description change fixes it"
    if bug.type == "feature_gap":
        return (
            f"`{bug.tool}` has no parameter that would have answered in one call: a missing feature, "
            "not a description"
        )
    if bug.type == "description":
        return "no trace evidence names the text to change (no right tool, no value that worked)"
    return "not caused by a description: no tool was chosen wrongly and no parameter went unused"


def _wrong_tool(bug: Bug, tools: dict[str, ToolDefinition], traces: Traces) -> Case | None:
    right, misled = bug.expected_tool, bug.tool
    if bug.type != "description" or not right or not misled or right not in tools or right == misled:
        return None
    quotes: list[StepQuote] = []
    late = False
    for evidence, trace in _evidence(bug, traces):
        calls = {step.index: step for step in trace.steps if isinstance(step, ToolCall)}
        for index in evidence.steps:
            call = calls.get(index)
            if call is not None:
                why = (
                    f"`{call.tool}` called for task `{evidence.task_id}`, a request `{right}` answers: "
                    f"its description drew the agent"
                )
                quotes.append(_quote(trace, evidence.trace, call, why))
        first = next((call for call in calls.values() if call.tool == right), None)
        if first is not None:
            late = True
            before = sum(1 for index in calls if index < first.index)
            why = f"`{right}`, the task's right tool, reached only after {before} other call(s)"
            quotes.append(_quote(trace, evidence.trace, first, why))
    return Case(
        bug,
        "late_tool" if late else "wrong_tool",
        right,
        misled=misled,
        quotes=quotes[:MAX_QUOTES],
    )


def _calls_to_tool(bug: Bug, traces: Traces) -> tuple[list, list[ToolCall], set[str]]:
    """The bug's (evidence, trace) pairs, the evidence steps that call its tool, and every argument
    those calls set: a parameter none of them set went unused."""
    pairs = list(_evidence(bug, traces))
    calls = [
        call for evidence, trace in pairs for call in _calls(trace, evidence.steps) if call.tool == bug.tool
    ]
    return pairs, calls, {name for call in calls for name in call.arguments}


def _walk(bug: Bug, tools: dict[str, ToolDefinition], traces: Traces) -> Case | None:
    """A date-window or paging walk on a tool whose ordering parameter went unused."""
    details = bug.details
    if bug.tool is None or not ("paging_argument" in details or "windows" in details):
        return None
    tool = tools[bug.tool]
    pairs, calls, used = _calls_to_tool(bug, traces)
    ordering = [name for name in order_parameters(tool) if name not in used]
    if not ordering:
        return None
    parameter = ordering[0]
    if "windows" in details:
        wanted = "earliest" if details.get("direction") == "forward" else "latest"
        walk = f"walked {len(details.get('windows') or [])} date windows"
    else:
        wanted = wanted_end(trace.prompt for _, trace in pairs)
        walk = (
            f"paged through {len(details.get('pages') or [])} pages with `{details.get('paging_argument')}`"
        )
    value = end_value(tool, parameter, wanted)
    found = details.get("found_step")
    quotes = []
    for evidence, trace in pairs:
        for call in _calls(trace, evidence.steps):
            if call.tool != bug.tool:
                continue
            moved = _moving(call, details)
            why = f"{moved}: `{parameter}` not set, so the calls walked on"
            if call.index == found:
                why = (
                    f"{moved}: what the answer used was only here; `{parameter}`"
                    + (f"={value}" if value else "")
                    + " would have put it on the first page"
                )
            quotes.append(_quote(trace, evidence.trace, call, why))
    facts = {"wanted": wanted, "value": value, "walk": walk}
    return Case(bug, "unused_parameter", bug.tool, parameter, facts=facts, quotes=quotes[:MAX_QUOTES])


def _unread(bug: Bug, tools: dict[str, ToolDefinition], traces: Traces) -> Case | None:
    """Unread result fields on a tool whose field-choosing parameter went unused."""
    unread = bug.details.get("unread_fields")
    if bug.tool is None or not isinstance(unread, dict) or not unread:
        return None
    tool = tools[bug.tool]
    pairs, calls, used = _calls_to_tool(bug, traces)
    choosing = [name for name in field_parameters(tool) if name not in used]
    if not choosing:
        return None
    parameter = choosing[0]
    unread_names = list(dict.fromkeys(path.rsplit(".", 1)[-1].removesuffix("[]") for path in unread))
    keys: list[str] = []
    for call in calls:
        for record in records_of(result_json(call))[:1]:
            keys += [key for key in record if key not in keys]
    kept = [key for key in keys if key not in unread_names]
    tokens = sum(value for value in unread.values() if isinstance(value, int | float))
    quotes = []
    for evidence, trace in pairs:
        for call in _calls(trace, evidence.steps):
            if call.tool == bug.tool:
                why = f"returned {', '.join(unread_names[:4])}, never used afterwards; `{parameter}` not set"
                quotes.append(_quote(trace, evidence.trace, call, why))
    facts = {"unread": unread_names, "kept": kept, "tokens": round(tokens / max(1, len(calls)))}
    return Case(bug, "unused_parameter", bug.tool, parameter, facts=facts, quotes=quotes[:MAX_QUOTES])


def _values(bug: Bug, tools: dict[str, ToolDefinition], traces: Traces) -> Case | None:
    """A refused call, then the same call with other values accepted: what the parameter accepts."""
    details = bug.details
    if not details.get("corrected_input") or bug.tool is None or "workaround_step" not in details:
        return None  # the agent corrected its own input: the schema did not say what it accepts
    failed_args = details.get("arguments")
    if not isinstance(failed_args, dict):
        return None
    for evidence, trace in _evidence(bug, traces):
        calls = {step.index: step for step in trace.steps if isinstance(step, ToolCall)}
        worked = calls.get(details["workaround_step"])  # type: ignore[arg-type]
        failed = next((calls[i] for i in evidence.steps if i in calls and calls[i].is_error), None)
        if worked is None or failed is None:
            continue
        changed = sorted(
            key for key in failed.arguments if failed.arguments.get(key) != worked.arguments.get(key)
        )
        known = schema_properties(tools[bug.tool].input_schema)
        changed = [name for name in changed if name in known]
        if not changed:
            return None
        parameter = changed[0]
        error = str(details.get("error_text") or failed.error_text or "")
        quotes = [
            _quote(
                trace, evidence.trace, failed, f"refused `{parameter}`={_value(failed.arguments[parameter])}"
            ),
            _quote(
                trace,
                evidence.trace,
                worked,
                f"accepted `{parameter}`={_value(worked.arguments.get(parameter))}",
            ),
        ]
        facts = {
            "failed": failed.arguments[parameter],
            "worked": worked.arguments.get(parameter),
            "error": error,
        }
        return Case(bug, "parameter_values", bug.tool, parameter, facts=facts, quotes=quotes)
    return None


_BUILDERS: tuple[Callable[[Bug, dict[str, ToolDefinition], Traces], Case | None], ...] = (
    _wrong_tool,
    _walk,
    _unread,
    _values,
)


def order_parameters(tool: ToolDefinition) -> list[str]:
    """Parameters that order the results: an ordering word in the name, or date-order words in the enum."""
    found = []
    for name, prop in schema_properties(tool.input_schema).items():
        values = {term for value in enum_values(prop) for term in terms(str(value))}
        if ORDER_WORDS & set(terms(name)) or values & (LATEST_WORDS | EARLIEST_WORDS):
            found.append(name)
    return found


def field_parameters(tool: ToolDefinition) -> list[str]:
    """Parameters that choose the result's fields: a field word in the name, a list or a text."""
    found = []
    for name, prop in schema_properties(tool.input_schema).items():
        kinds = {prop.get("type")} | {b.get("type") for b in prop.get("anyOf") or [] if isinstance(b, dict)}
        if FIELD_WORDS & set(terms(name)) and kinds & {"array", "string"}:
            found.append(name)
    return found


def enum_values(prop: dict[str, Any]) -> list[Any]:
    """A parameter's allowed values: its `enum`, or those of its `anyOf` branches."""
    values = list(prop.get("enum") or [])
    for branch in prop.get("anyOf") or []:
        if isinstance(branch, dict):
            values += list(branch.get("enum") or []) + ([branch["const"]] if "const" in branch else [])
    return values


def wanted_end(prompts: Iterable[str]) -> str | None:
    """`latest` or `earliest` when the tasks' words ask for one end of a date order, else None."""
    words = {term for prompt in prompts for term in terms(prompt)}
    latest, earliest = bool(words & LATEST_WORDS), bool(words & EARLIEST_WORDS)
    return "latest" if latest and not earliest else "earliest" if earliest and not latest else None


def end_value(tool: ToolDefinition, parameter: str, wanted: str | None) -> str | None:
    """The enum value of `parameter` that puts the `wanted` end first, when its words say so."""
    if wanted is None:
        return None
    words = LATEST_WORDS if wanted == "latest" else EARLIEST_WORDS
    prop = schema_properties(tool.input_schema).get(parameter, {})
    return next((str(value) for value in enum_values(prop) if set(terms(str(value))) & words), None)


def value_end(value: Any) -> str | None:
    """Which end of a date order an enum value puts first, by its words: `latest`, `earliest` or None."""
    words = set(terms(str(value)))
    latest, earliest = bool(words & LATEST_WORDS), bool(words & EARLIEST_WORDS)
    return "latest" if latest and not earliest else "earliest" if earliest and not latest else None


def _evidence(bug: Bug, traces: Traces) -> Iterable[tuple[Any, Trace]]:
    """The bug's evidence entries with their traces, the first `MAX_TRACES` that can be read."""
    shown = 0
    for evidence in bug.evidence:
        trace = traces.get(evidence.trace)
        if trace is None:
            continue
        yield evidence, trace
        shown += 1
        if shown >= MAX_TRACES:
            return


def _calls(trace: Trace, steps: Sequence[int]) -> list[ToolCall]:
    wanted = set(steps)
    return [step for step in trace.steps if isinstance(step, ToolCall) and step.index in wanted]


def _moving(call: ToolCall, details: dict[str, Any]) -> str:
    """How a walk's call is named in a quote: its paging argument's value, or its date window."""
    key = details.get("paging_argument")
    if isinstance(key, str):
        value = call.arguments.get(key)
        return f"`{key}`={_value(value)}" if value is not None else "the first page"
    for window in details.get("windows") or []:
        if isinstance(window, dict) and window.get("step") == call.index:
            return f"the window {window.get('from') or '…'}..{window.get('to') or '…'}"
    return "a call of the walk"


def _quote(trace: Trace, ref: str, call: ToolCall, why: str) -> StepQuote:
    return StepQuote(
        trace=ref,
        task_id=trace.task_id,
        step=call.index,
        call=f"{call.tool}({_cut(_json(call.arguments), CALL_CHARS)})",
        agent_said=_said_before(trace, call.index),
        why=why,
    )


def _said_before(trace: Trace, index: int) -> str | None:
    """The agent's text (or its visible thinking) in the model turn that made the call at step `index`."""
    for step in reversed(trace.steps[:index]):
        if isinstance(step, ModelTurn):
            text = step.text.strip() or " ".join(step.thinking).strip()
            return _cut(text, SAID_CHARS) if text else None
    return None


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _value(value: Any) -> str:
    return _cut(_json(value), 60)


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
