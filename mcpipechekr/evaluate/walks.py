"""Which steps of a walk held what the task needed: shared by the date-window and pagination analyzers.

A walk (date windows moving one way, pages of one listing) is waste only when
the agent went through steps that did not hold what it was after. Row counts
cannot say that: a window of forty rows, none of them the one the task wanted,
is as empty for the task as a window of none. So a step *holds* the task's
values when:

1. **the final answer names it**: a record of the step's result has a value
   (its id, name, title, subject, date, ...) that the final answer mentions, by
   the matching rule of `evaluate.matching`; for results that are not JSON, the
   answer's own days, numbers and e-mail addresses are looked for in the
   result's text;
2. otherwise, **the baseline names it**: one of the identifying values of the
   task's `expected_result` (else the baseline's accepted result) appears in the
   step's result.

Only *distinctive* values count: a value that shows up in the results of more
than one step of the walk (the sender every row shares, a `total` every page
repeats), or in the walk's own arguments (the searched name), says nothing
about where the needed item was.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from mcpipechekr.artifacts.trace import ToolCall
from mcpipechekr.evaluate.base import TraceContext, records_of, result_json
from mcpipechekr.evaluate.correctness import (
    IDENTIFYING_KEYS,
    Identifying,
    expected_values,
    identifying_values,
)
from mcpipechekr.evaluate.matching import MIN_LENGTH, Haystack, as_day, dates_in, normalise

_NUMBER = re.compile(r"\b\d[\d,]*\d{2}\b")
_WRITTEN_DATE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}(?:[T ][\d:.]+)?|\b\d{1,2}(?:st|nd|rd|th)?\s+[A-Za-z]{3,9}\.?,?\s+\d{4}\b"
    r"|\b[A-Za-z]{3,9}\.?\s+\d{1,2}(?:st|nd|rd|th)?,?\s+\d{4}\b"
)
_ADDRESS = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")
_ID_LIKE = ("_id", "id", "name", "title", "subject", "date", "_at", "email", "number", "code", "sku", "isbn")


@dataclass(frozen=True)
class Held:
    """Positions (in the walk) of the steps holding the task's values, and what said so."""

    positions: tuple[int, ...]
    source: Literal["answer", "baseline"] | None


def _specific(value: Any) -> bool:
    """Long enough to tell apart from noise (the matching rule's minimum), and not a boolean."""
    if value is None or isinstance(value, bool) or not isinstance(value, str | int | float):
        return False
    return len(str(value).strip()) >= MIN_LENGTH


def answer_values(answer: str) -> list[str]:
    """What an answer pins down on its own: its days, numbers of three or more digits, e-mail addresses."""
    numbers = {match.replace(",", "") for match in _NUMBER.findall(_WRITTEN_DATE.sub(" ", answer))}
    return sorted(dates_in(answer) | numbers | set(_ADDRESS.findall(answer)))


def _key(value: Any) -> str:
    text = str(value)
    return as_day(text) or normalise(text)


def record_values(record: dict[str, Any]) -> list[Any]:
    """The values that may identify a record: its strings, and its numbers under id-, number-like keys.

    Other numbers (a price, a count of minutes) say too little: an answer's `12` is rarely a row's.
    """
    return [
        value
        for key, value in record.items()
        if _specific(value)
        and (isinstance(value, str) or key.lower() in IDENTIFYING_KEYS or key.lower().endswith(_ID_LIKE))
    ]


def result_text(call: ToolCall) -> str:
    """Everything the call's result said, as text: its text blocks, else its structured content."""
    texts = [str(block.get("text", "")) for block in call.result_content if block.get("type") == "text"]
    if texts:
        return "\n".join(texts)
    if call.structured_content is not None:
        return orjson.dumps(call.structured_content, default=str).decode()
    return ""


def _distinctive(per_step: list[list[Any]], arguments: Haystack) -> list[list[Any]]:
    """Each step's values, less those seen in another step's values or in the walk's arguments."""
    seen: dict[str, set[int]] = {}
    for position, values in enumerate(per_step):
        for value in values:
            seen.setdefault(_key(value), set()).add(position)
    return [
        [
            value
            for value in values
            if len(seen[_key(value)]) == 1 and not arguments.contains(value, strict=True)
        ]
        for values in per_step
    ]


def _arguments(calls: Iterable[ToolCall]) -> Haystack:
    return Haystack([orjson.dumps(call.arguments, default=str).decode() for call in calls])


def _named_by_answer(ctx: TraceContext, calls: list[ToolCall], arguments: Haystack) -> tuple[int, ...]:
    answer = ctx.trace.final_answer
    if not answer:
        return ()
    said = Haystack([answer])
    per_step: list[list[Any]] = []
    for call in calls:
        data = result_json(call)
        if not isinstance(data, dict | list):  # text: look for the answer's own days, numbers, addresses
            text = Haystack([result_text(call)])
            per_step.append([value for value in answer_values(answer) if text.contains(value, strict=True)])
        else:
            per_step.append([value for record in records_of(data) for value in record_values(record)])
    distinct = _distinctive(per_step, arguments)
    return tuple(
        position
        for position, values in enumerate(distinct)
        if any(said.contains(value, strict=True) for value in values)
    )


def _expected(ctx: TraceContext) -> Identifying | None:
    if ctx.task is not None and ctx.task.expected_result is not None:
        return expected_values(ctx.task.expected_result)
    return identifying_values(ctx.baseline.result) if ctx.baseline is not None else None


def _named_by_baseline(ctx: TraceContext, calls: list[ToolCall], arguments: Haystack) -> tuple[int, ...]:
    expected = _expected(ctx)
    if expected is None:
        return ()
    values = [value for group in expected.groups for value in group if _specific(value)]
    if not values:
        return ()
    texts = [Haystack([result_text(call)]) for call in calls]
    per_step = [[value for value in values if text.contains(value, strict=True)] for text in texts]
    distinct = _distinctive(per_step, arguments)
    return tuple(position for position, found in enumerate(distinct) if found)


def held(ctx: TraceContext, calls: list[ToolCall]) -> Held:
    """Which of the walk's calls held the task's values (module docstring): the answer's, else the baseline's.

    Answer first: it is what the agent used; the baseline only when the answer names nothing of the walk.
    """
    arguments = _arguments(calls)
    named = _named_by_answer(ctx, calls, arguments)
    if named:
        return Held(named, "answer")
    named = _named_by_baseline(ctx, calls, arguments)
    if named:
        return Held(named, "baseline")
    return Held((), None)


def answer_states(ctx: TraceContext, number: int) -> bool:
    """Whether the final answer states this number (a count or a total the walk added up)."""
    answer = ctx.trace.final_answer
    return bool(answer) and Haystack([answer]).contains(number, strict=True)


def scalars(data: Any) -> Iterator[Any]:
    """Every scalar inside a JSON value, depth first: where a next-page cursor may hide."""
    if isinstance(data, dict):
        for value in data.values():
            yield from scalars(value)
    elif isinstance(data, list):
        for value in data:
            yield from scalars(value)
    else:
        yield data
