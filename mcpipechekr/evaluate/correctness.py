"""Correctness against the baseline: is the final answer the accepted one?

Deterministic tasks. The baseline's *identifying values* must appear in the
final answer, by the matching rule of `evaluate.matching`. They come from the
task's `expected_result` when it has one (`expected_values`), else from the
last reference call's result (`identifying_values`):

`expected_result` (the author's word, checked strictly):
- a number is one value (0 to 20 may also be written as a word: `3` or
  `three`); a boolean is `yes`/`true` or `no`/`false`;
- a string is one value: the whole string must appear (a long one is quoted
  by any 6 consecutive words of it, see `matching`);
- a list is a *closed set*: every item must appear, and no other value of the
  same kind may (a wrong or extra name is a wrong answer, the order does not
  matter). "Of the same kind" means: a value that the server returned under the
  same field as one of the items (in the trace's tool results or the baseline's
  reference result), e.g. the other `attendees` of the meetings the agent read;
- a mapping needs each of its values; nested mappings and lists are taken apart
  the same way (a list inside a mapping is a closed set too);
- a list of records (objects) needs each record identified by its values.

A reference call's result (no `expected_result`):
- a record (an object with `id`, `subject`, `title`, `name`, `sender_name`,
  `date`, ...) is one group whose alternatives are those values: naming the
  id OR the subject OR the date identifies it; a single record (the answer of
  "who attended X", "which dates is Y closed") also counts its other text
  values and the items of its lists as alternatives, as the task may ask for
  any of its fields;
- a list of records needs only ONE of its records identified (`match: any`):
  the reference calls of "find the earliest X" return the candidates, not the
  winner, and "list the X" answers name the records by different fields;
- an object of scalars (`{"count": 12}`) needs each scalar, except the fields
  that describe the response rather than the answer (`*_at`, `timestamp`,
  `took_ms`, `cursor`, `offset`, `limit`, `page`, `*_id`, ...);
- text is read as JSON when it is JSON; free text (a text-returning server, or
  the phase-0 agent's answer) yields NOTHING: the days, hours and numbers in it
  are mostly not what the task asks for, and checking them failed correct
  answers. Such a task is *unchecked* (see `CheckStatus`); give it an
  `expected_result` to check it;
- a value the task's prompt already names is no alternative (an answer need not
  repeat the question); a group left with none is dropped.

A task whose baseline yields no values is `unchecked`: its answers are neither
right nor wrong, and the report says so (never a silent success).

Open-ended tasks are judged by the phase-2 model when one is configured
(`evaluate.answer_judge`) and are `unjudged` without one. `similarity` (the
overlap coefficient of content words, numbers and days of the answer and of
the baseline result, |A ∩ B| / min(|A|, |B|)) is only a hint for a person: a
correct answer in other words scores low, so it never fails an answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from mcpipechekr.artifacts.tool_result import json_text
from mcpipechekr.evaluate.base import records_of
from mcpipechekr.evaluate.matching import Haystack, as_day, dates_in, normalise

IDENTIFYING_KEYS = ("id", "uuid", "key", "name", "title", "subject", "sender_name", "date", "created_at")
_WORD = re.compile(r"[a-z][a-z'-]{3,}|\d{2,}")
_RESPONSE_FIELD = re.compile(
    r"(^|_)(at|time|timestamp|ts|ms|took|elapsed|duration|generated|cursor|next|prev|offset|limit|page|"
    r"page_size|per_page|version|id)$"
)
STOP_WORDS = frozenset(
    """about above after again against also among another been before being below between both cannot
    could does doing down during each even ever every from further have having here hers herself himself
    into itself just least less made make many more most much must myself never none only other ours
    over same shall should since some such than that their theirs them themselves then there these they
    this those through under until upon very were what when where which while whom whose will with
    within without would your yours yourself""".split()
)
NUMBER_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty"
).split()

CheckStatus = Literal["checked", "unchecked", "unjudged", "judged"]
"""How an answer's correctness was decided: `checked` against identifying values, `judged` by the
phase-2 model (open-ended), `unchecked` (the baseline names nothing to look for), `unjudged`
(open-ended, no phase-2 model)."""

NOTHING_CHECKABLE = (
    "the baseline names no values to look for: give the task an expected_result "
    "(or reference_calls whose last result is structured)"
)


@dataclass(frozen=True)
class Identifying:
    """Groups of alternative values; `match` says whether all groups or any one must appear.

    `closed` lists the sets whose membership is checked both ways: no value of the same kind
    outside the set may appear either.
    """

    groups: tuple[tuple[Any, ...], ...]
    match: str = "all"
    closed: tuple[tuple[str, ...], ...] = field(default=())


def _number_group(value: int | float) -> tuple[Any, ...]:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and 0 <= value < len(NUMBER_WORDS):
        return (value, NUMBER_WORDS[value])
    return (value,)


def _record_group(record: dict[str, Any]) -> tuple[Any, ...]:
    values = [record[key] for key in IDENTIFYING_KEYS if key in record and record[key] not in (None, "")]
    if not values:
        values = [
            v for k, v in record.items() if _is_scalar(v) and not _RESPONSE_FIELD.search(str(k).lower())
        ][:3]
    return tuple(values)


def _other_values(record: dict[str, Any]) -> tuple[Any, ...]:
    """A single record's text values and list items beyond its identifying keys (not response metadata)."""
    values: list[Any] = []
    for key, value in record.items():
        if key in IDENTIFYING_KEYS or _RESPONSE_FIELD.search(str(key).lower()):
            continue
        items = value if isinstance(value, list) else [value]
        values.extend(item for item in items if isinstance(item, str) and item.strip())
    return tuple(values)


def _is_scalar(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def expected_values(expected: Any) -> Identifying:
    """The values an answer must name for a task's `expected_result` (rules in the module docstring)."""
    if isinstance(expected, dict) and "values" in expected and "match" in expected:
        return _stored(expected)
    groups: list[tuple[Any, ...]] = []
    closed: list[tuple[str, ...]] = []
    _expected_walk(expected, groups, closed)
    return Identifying(tuple(groups), "all", tuple(closed))


def _expected_walk(value: Any, groups: list[tuple[Any, ...]], closed: list[tuple[str, ...]]) -> None:
    if value is None or value == "":
        return
    if isinstance(value, bool):
        groups.append(("yes", "true") if value else ("no", "false"))
    elif isinstance(value, int | float):
        groups.append(_number_group(value))
    elif isinstance(value, str):
        groups.append((value.strip(),))
    elif isinstance(value, dict):
        for item in value.values():
            _expected_walk(item, groups, closed)
    elif isinstance(value, list):
        for item in value:
            _expected_walk(item, groups, closed)
        items = tuple(str(item).strip() for item in value if _is_scalar(item) and str(item).strip())
        if items and len(items) == len(value):
            closed.append(items)


def _stored(payload: dict[str, Any]) -> Identifying:
    groups = tuple(tuple(group) if isinstance(group, list) else (group,) for group in payload["values"])
    closed = tuple(tuple(str(item) for item in items) for items in payload.get("closed") or ())
    return Identifying(groups, str(payload["match"]), closed)


def identifying_values(result: Any, prompt: str = "") -> Identifying:
    """The values an answer must name for a server's result, by the rules in the module docstring.

    `prompt` is the task's: values it names are not alternatives.
    """
    found = _identifying(result)
    if not prompt or not found.groups:
        return found
    asked = Haystack([prompt])
    groups = []
    for group in found.groups:
        kept = tuple(v for v in group if not (isinstance(v, str) and asked.contains(v, strict=True)))
        if kept:
            groups.append(kept)
    return Identifying(tuple(groups), found.match, found.closed)


def _identifying(result: Any) -> Identifying:
    if isinstance(result, dict) and "values" in result and "match" in result:
        return _stored(result)
    if isinstance(result, str):
        parsed = json_text(result)
        return _identifying(parsed) if parsed is not None else Identifying(())
    if isinstance(result, int | float) and not isinstance(result, bool):
        return Identifying((_number_group(result),))
    records = records_of(result)
    if records:
        groups = tuple(group for group in (_record_group(record) for record in records) if group)
        return Identifying(groups, "any")
    if isinstance(result, dict):
        if any(key in result for key in IDENTIFYING_KEYS):
            group = _record_group(result) + _other_values(result)
            return Identifying((group,) if group else ())
        scalars = [
            value
            for key, value in result.items()
            if _is_scalar(value) and not _RESPONSE_FIELD.search(str(key).lower())
        ]
        return Identifying(tuple(_number_group(v) if not isinstance(v, str) else (v,) for v in scalars))
    if isinstance(result, list):
        return Identifying(tuple((value,) for value in result if _is_scalar(value)))
    return Identifying(())


def identifying_payload(result: Any, *, expected: bool = False, prompt: str = "") -> dict[str, Any]:
    """`{"values": [[...], ...], "match": "all"|"any"}` (+ `closed` sets): as stored in baseline.json.

    `expected` reads `result` as a task's `expected_result` (`expected_values`), else as a
    server's or agent's result (`identifying_values`, without the values the task's `prompt` names).
    """
    found = expected_values(result) if expected else identifying_values(result, prompt)
    payload: dict[str, Any] = {"values": [list(group) for group in found.groups], "match": found.match}
    if found.closed:
        payload["closed"] = [list(items) for items in found.closed]
    return payload


@dataclass(frozen=True)
class Verdict:
    """A deterministic answer's check: right or not, what it missed, what it named in excess, why."""

    correct: bool
    missing: list[str]
    reason: str
    status: CheckStatus = "checked"
    extra: list[str] = field(default_factory=list)


def check_deterministic(answer: str | None, expected: Any, seen: Iterable[Any] = ()) -> Verdict:
    """Whether the answer names the baseline's identifying values, and no stranger to a closed set.

    `seen` holds the results the answer was drawn from (the trace's tool results, the baseline's
    reference result): where the values of the same kind as a closed set's items are looked for.
    """
    found = identifying_values(expected)
    if not found.groups:
        return Verdict(False, [], NOTHING_CHECKABLE, "unchecked")
    if not answer:
        return Verdict(False, [_show(group) for group in found.groups], "no final answer")
    haystack = Haystack([answer])
    hits = [any(haystack.contains(value, strict=True) for value in group) for group in found.groups]
    missing = [_show(group) for group, hit in zip(found.groups, hits, strict=True) if not hit]
    if found.match == "any":
        ok = any(hits)
        reason = "names one of the expected records" if ok else "names none of the expected records"
        return Verdict(ok, [] if ok else missing, reason)
    extra = _extras(haystack, found.closed, seen) if found.closed else []
    ok = not missing and not extra
    parts = []
    if missing:
        parts.append(f"misses {', '.join(missing)}")
    if extra:
        parts.append(f"names {', '.join(extra)}, not in the expected list")
    return Verdict(ok, missing, "; ".join(parts) if parts else "names every expected value", extra=extra)


def fits_derived(expected: Any, contents: Iterable[Any]) -> bool:
    """Whether results that do not spell out an expected_result can still give it, as a derived answer.

    A proposed task may ask what the results imply rather than quote: a yes or no
    (a comparison of two records), or a number of records (all of a listing, or
    those that pass a filter). So each value of `expected` must appear in the
    results, or be a boolean, or a whole number no larger than the most
    records, list items or text lines one result holds. A plausibility rule
    for the baseline's judge, not a proof: `tasks propose` proves its answers
    by deriving them again from replayed results.
    """
    contents = list(contents)
    haystack = Haystack([orjson.dumps(contents, default=str).decode()])
    largest = max((_largest_list(content) for content in contents), default=0)
    groups: list[tuple[Any, ...]] = []
    _expected_walk(expected, groups, [])
    for group in groups:
        value = group[0]
        if isinstance(value, str) and value in ("yes", "no") and group[1:] in (("true",), ("false",)):
            continue
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= largest:
            continue
        if not any(haystack.contains(option, strict=True) for option in group):
            return False
    return True


def _largest_list(content: Any) -> int:
    if isinstance(content, str):
        parsed = json_text(content)
        if parsed is None:
            return sum(1 for line in content.splitlines() if line.strip())
        content = parsed
    if isinstance(content, dict):
        return max(
            (_largest_list(value) for value in content.values() if isinstance(value, dict | list)), default=0
        )
    if isinstance(content, list):
        inner = max((_largest_list(item) for item in content if isinstance(item, dict | list)), default=0)
        return max(len(content), inner)
    return 0


def _extras(haystack: Haystack, closed: tuple[tuple[str, ...], ...], seen: Iterable[Any]) -> list[str]:
    """Values the answer names that the server gave under the same field as a closed set's items."""
    fields: dict[str, set[str]] = {}
    for result in seen:
        for key, value in _fields(result):
            fields.setdefault(key, set()).add(value)
    extra: list[str] = []
    for items in closed:
        own = {normalise(item) for item in items}
        kin = set().union(*(values for values in fields.values() if own & {normalise(v) for v in values}))
        for value in sorted(kin):
            name = normalise(value)
            if not name or any(name in item or item in name for item in own):
                continue  # an expected item, or part of one ("Ann" of "Ann Lee")
            if haystack.contains(value, strict=True) and value not in extra:
                extra.append(value)
    return extra


def _fields(result: Any, key: str = "") -> Iterator[tuple[str, str]]:
    """(field name, string value) of every string in a JSON result, text results read as JSON."""
    if isinstance(result, str):
        parsed = json_text(result)
        if parsed is not None:
            yield from _fields(parsed, key)
        elif key:
            yield key, result
    elif isinstance(result, dict):
        for name, value in result.items():
            yield from _fields(value, str(name))
    elif isinstance(result, list):
        for item in result:
            yield from _fields(item, key)


def _show(group: tuple[Any, ...]) -> str:
    return " / ".join(str(value) for value in group)


def _terms(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set().union(*(_terms(item) for item in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(_terms(item) for item in value)) if value else set()
    if value is None or isinstance(value, bool):
        return set()
    text = str(value)
    day = as_day(text)
    if day:
        return {day}
    words = {word for word in _WORD.findall(normalise(text)) if word not in STOP_WORDS}
    return words | dates_in(text)


def similarity(answer: str | None, reference: Any) -> float:
    """Overlap coefficient of content words, numbers and days; 0 when either side has none."""
    ours, theirs = _terms(answer or ""), _terms(reference)
    if not ours or not theirs:
        return 0.0
    return len(ours & theirs) / min(len(ours), len(theirs))
