"""Error then workaround: a failing call, and what the agent did instead."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

import orjson

from mcpipechekr.artifacts.bug_report import BugSeverity
from mcpipechekr.artifacts.trace import ToolCall
from mcpipechekr.evaluate.base import BugSighting, TraceContext, call_cost, records_of, result_json

_TOOL_PREFIX = re.compile(r"^\s*error executing tool [\w.-]+(?::\s*|\s*$)", re.I)
_CATEGORY = re.compile(r"^\s*[\w ]{0,30}?\berror:\s*", re.I)
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`")
_NUMBER = re.compile(r"\b\d[\d.,:-]*\b")
SLUG_WORDS = 8
_DEFECTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "SQL syntax error",
        re.compile(
            r"\bsyntax error\b|unrecognized token|unterminated quoted|unclosed quotation"
            r"|you have an error in your sql",
            re.I,
        ),
    ),
    (
        "Python traceback",
        re.compile(
            r"traceback \(most recent call last\)|\bFile \"[^\"]+\", line \d+"
            r"|\b(KeyError|TypeError|AttributeError|IndexError|NameError|UnboundLocalError"
            r"|ZeroDivisionError|RecursionError)\b|'NoneType' object",
        ),
    ),
    ("internal error", re.compile(r"-32603\b|\binternal (server )?error\b", re.I)),
)
"""Messages that reveal a defect in the server's code, whatever the input: no schema or description
fixes them, so they are `bug`s even when the agent worked around them."""
_OPTIONS = {"limit", "offset", "page", "page_size", "per_page", "cursor", "max_results"}


def error_text(call: ToolCall) -> str:
    """The message the agent saw: error_text, else the text blocks."""
    if call.error_text:
        return call.error_text.strip()
    texts = [str(block.get("text", "")) for block in call.result_content if block.get("type") == "text"]
    return "\n".join(texts).strip() or "(no message)"


def error_core(text: str) -> str:
    """The message without the SDK's `Error executing tool X:` prefix and a leading `<category> error:`."""
    first = text.splitlines()[0] if text else ""
    return _CATEGORY.sub("", _TOOL_PREFIX.sub("", first), count=1).strip() or first


def revealed_defect(text: str) -> str | None:
    """What kind of server defect an error message reveals (`SQL syntax error`, ...), or None."""
    return next((kind for kind, pattern in _DEFECTS if pattern.search(text)), None)


def error_key(text: str, tool: str | None = None) -> str:
    """The stable core of an error message, for the bug's id.

    `Error executing tool q: database error: no such column: fts.rank` -> `no such column: fts.rank`:
    the SDK's prefix and a leading `<category> error:` go, quoted values and numbers go (they vary
    between calls), and at most eight words are kept. The words of `tool`'s name go too: the id
    names the tool once, at its end.
    """
    core = _CATEGORY.sub("", _TOOL_PREFIX.sub("", text.splitlines()[0] if text else ""), count=1)
    core = _NUMBER.sub(" ", _QUOTED.sub(" ", core))
    words = re.findall(r"[a-z0-9]+", core.lower())
    named = re.findall(r"[a-z0-9]+", tool.lower()) if tool else []
    for start in range(len(words) - len(named), -1, -1) if named else ():
        if words[start : start + len(named)] == named:
            del words[start : start + len(named)]
    return " ".join(words[:SLUG_WORDS]) or "error"


def _projection_keys(failed: ToolCall, success: ToolCall, dropped: list[str]) -> tuple[str, list[str]] | None:
    """(argument, fields) when a dropped argument was a list of field names the working result has."""
    records = records_of(result_json(success))
    if not records:
        return None
    for key in dropped:
        value = failed.arguments.get(key)
        if isinstance(value, list) and value and all(isinstance(item, str) for item in value):
            if all(item in records[0] for item in value):
                return key, list(value)
    return None


def _projected_tokens(success: ToolCall, fields: list[str]) -> int:
    """What the working result would cost holding only `fields`: its tokens scaled by the data's shrinkage."""
    data = result_json(success)
    full = len(orjson.dumps(data, default=str))

    def project(value: Any) -> Any:
        if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
            return [{key: item[key] for key in fields if key in item} for item in value]
        if isinstance(value, dict):
            return {key: project(item) for key, item in value.items()}
        return value

    projected = len(orjson.dumps(project(data), default=str))
    scale = projected / full if full else 1.0
    from mcpipechekr._util.tokens import estimate_tokens

    return estimate_tokens(success.arguments) + round(success.result_tokens_estimated * scale)


@dataclass
class ErrorWorkaround:
    """Flags a tool error and prices what the agent had to do around it.

    Rule: a call with `is_error`, then the next successful call (the
    workaround: the same tool with changed arguments, or another tool). The
    error's text is kept verbatim; its id comes from the message's stable core
    (quoted values and numbers removed) and the tool. Priced as the failed and
    intermediate calls; when the workaround dropped a projection argument (a
    list of field names its result has, e.g. `fields`), the optimum is the
    working result cut down to those fields, so the extra payload counts too.
    When the workaround kept the same tool and argument names and only changed
    values, the agent corrected its own input: still a `bug` (an error the
    server returned is one, whatever its cause), of low severity, whose
    expected outcome is a schema and description that say what it accepts;
    when the message reveals a defect in the server's code (`revealed_defect`:
    an SQL syntax error, e.g. on a quoted input; a Python traceback or
    exception name; an internal error, -32603) it is high severity for SQL
    (input reaches the query text) or when nothing worked, medium otherwise.
    The id is `BUG-<the message's core>-<tool>`, the tool named once. Every
    sighting here is classified `server`.

    Blind spots: an error with no later success (the agent gave up) is still
    reported, priced as the failed call; an error the task provoked on purpose
    is indistinguishable from a bug; messages that embed variable words
    (names without quotes) split into several ids.
    """

    name: ClassVar[str] = "error_workaround"

    def analyze(self, ctx: TraceContext) -> list[BugSighting]:
        found: dict[str, BugSighting] = {}
        calls = ctx.calls
        for position, failed in enumerate(calls):
            if not failed.is_error:
                continue
            later = calls[position + 1 :]
            success = next((call for call in later if not call.is_error), None)
            sighting = self._sighting(ctx, failed, success, later)
            previous = found.get(sighting.id)
            if previous is None:
                found[sighting.id] = sighting
            else:
                previous.steps = sorted(set(previous.steps) | set(sighting.steps))
                previous.wasted = sorted(set(previous.wasted) | set(sighting.wasted))
                if previous.optimal_tokens is not None and sighting.optimal_tokens is not None:
                    previous.optimal_tokens += sighting.optimal_tokens
        return list(found.values())

    def _sighting(
        self, ctx: TraceContext, failed: ToolCall, success: ToolCall | None, later: list[ToolCall]
    ) -> BugSighting:
        text = error_text(failed)
        key = error_key(text, failed.tool)
        args = orjson.dumps(failed.arguments, option=orjson.OPT_SORT_KEYS, default=str).decode()
        defect = revealed_defect(text)
        defect_criteria = (
            [f"`{failed.tool}` with {args} answers, or rejects the input with a message, never a {defect}"]
            if defect
            else []
        )
        if success is None:
            return BugSighting(
                type="bug",
                slug=(key, failed.tool),
                severity="high",
                tool=failed.tool,
                trigger=f"calling `{failed.tool}` with {args}",
                observed=f"error: {text} (no later call succeeded)",
                expected=f"`{failed.tool}` answers these arguments, or rejects them with how to fix them",
                acceptance_criteria=[
                    f"`{failed.tool}` with {args} no longer fails with '{error_core(text)}'",
                    *defect_criteria,
                ],
                steps=[failed.index],
                wasted=[failed.index],
                details={
                    "error_text": text,
                    "arguments": failed.arguments,
                    **({"defect": defect} if defect else {}),
                },
            )
        between = [call for call in later if failed.index < call.index < success.index]
        steps = [failed.index, *(call.index for call in between), success.index]
        wasted = steps[:-1]
        same_tool = success.tool == failed.tool
        dropped = sorted(set(failed.arguments) - set(success.arguments)) if same_tool else []
        kept = sorted(set(failed.arguments) & set(success.arguments)) if same_tool else []
        changed_values = same_tool and set(failed.arguments) == set(success.arguments)
        self_corrected = changed_values and not defect  # a crash on some input is no description problem
        projection = _projection_keys(failed, success, dropped) if same_tool else None
        optimal = _projected_tokens(success, projection[1]) if projection else call_cost(success)
        core = error_core(text)
        criteria = [f"`{failed.tool}` with {args} no longer fails with '{core}'", *defect_criteria]
        kept = [name for name in kept if name.lower() not in _OPTIONS]
        if projection:
            names = ", ".join(kept) or "the other filters"
            criteria.append(f"{names} combined with {projection[0]} must return the projected fields")
        elif dropped:
            names = ", ".join(kept) or "its other arguments"
            criteria.append(f"{names} combined with {', '.join(dropped)} works")
        if same_tool:
            workaround = (
                f"retried `{success.tool}` with changed values"
                if changed_values
                else f"retried `{success.tool}` without {', '.join(dropped) or 'the failing arguments'}"
            )
        else:
            workaround = f"switched to `{success.tool}`"
        severity: BugSeverity
        if self_corrected:
            severity = "low"
        elif projection or dropped or defect == "SQL syntax error":
            severity = "high"  # a lost feature, or input reaching the SQL text (injection class)
        else:
            severity = "medium"
        return BugSighting(
            type="bug",
            slug=(key, failed.tool),
            severity=severity,
            tool=failed.tool,
            trigger=f"calling `{failed.tool}` with {args}",
            observed=f"error: {text}; the agent {workaround} at step {success.index}",
            expected=(
                f"`{failed.tool}`'s description and schema say which values it accepts"
                if self_corrected
                else f"`{failed.tool}` answers these arguments"
                + (f", returning only the fields {', '.join(projection[1])}" if projection else "")
            ),
            acceptance_criteria=criteria,
            steps=steps,
            wasted=wasted,
            optimal_tokens=optimal,
            details={
                "error_text": text,
                "arguments": failed.arguments,
                "workaround_step": success.index,
                "workaround_tool": success.tool,
                "dropped_arguments": list(dropped),
                **({"corrected_input": True} if self_corrected else {}),
                **({"defect": defect} if defect else {}),
            },
        )
