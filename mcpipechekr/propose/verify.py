"""Verifying a proposed task before it is written: replay its reference calls twice, derive its answer.

Why: a proposal is a guess (a template's, or a model's) until the server gives
the same answer again. Each proposal's reference calls are replayed in order
on a freshly started server (not the one exploration warmed up), twice, and
the task is kept only when

- every call names a tool the server lists and annotates read-only (the
  baseline would refuse any other, `baseline.write_call_problems`) and
  answers without an error;
- both replays give the expected answer, from the same results (identifiers
  and time stamps aside: a random draw can give the same yes or no twice):
  a template's by its own rule
  (`Proposal.derive`: the record the prompt names, its field; the records that
  pass the filter, counted), a model's as values of the last result (a JSON
  value equal to it, a list that long, or the value written in the text);
- the answer does not move with the clock: no value within a day and a half
  of now (a current time, a file modified just now, a date converted today),
  in the answer or, for a one-call question, in the single record it was read
  from (a converted time's other fields);
- the prompt does not give its answer away;
- the correctness check of Phase 2 (`evaluate.correctness.check_deterministic`)
  accepts an answer that states the expected result, worded as an agent
  would (a count as a number, a yes/no question as yes or no), so an agent
  that answers right is judged right.

Anything else is refused with its reason, and listed, never written.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import mcp_types
import orjson

from mcpipechekr.evaluate.correctness import check_deterministic, identifying_payload
from mcpipechekr.evaluate.matching import Haystack
from mcpipechekr.propose.explore import IDENTIFIER
from mcpipechekr.propose.reading import Reading, is_id_name, read_result, result_text
from mcpipechekr.propose.rules import epoch, iso_moment
from mcpipechekr.propose.templates import Proposal
from mcpipechekr.server.annotations import write_risk
from mcpipechekr.server.lifecycle import ServerUnderTest

REPLAYS = 2
VOLATILE_WINDOW = timedelta(hours=36)
"""A moment this close to now is the clock's, not the data's."""


@dataclass(frozen=True)
class Refusal:
    """A proposal that was not written, and why."""

    prompt: str
    reason: str
    template: str


def verify_proposal(
    server: ServerUnderTest,
    tools: dict[str, mcp_types.Tool],
    proposal: Proposal,
    timeout_s: float,
    now: datetime | None = None,
    read_only: Collection[str] = (),
) -> str | None:
    """None when the proposal's answer is reproduced twice; else why not.

    `read_only`: tools the server's author trusts to only read (check.read_only).
    """
    if not proposal.reference_calls:
        return "it has no reference calls"
    if (
        proposal.expected_result is None
        or proposal.expected_result == ""
        or (proposal.expected_result in ([], {}) and proposal.template != "negative")
    ):
        return "it has no expected_result"
    now = now or datetime.now(UTC)
    moving = volatile(proposal.expected_result, None, now)
    if moving is not None:
        return f"it depends on the clock ({moving}): the answer would change"
    answers, singles, facts = [], [], []
    for _ in range(REPLAYS):
        replayed = replay(server, tools, proposal.reference_calls, timeout_s, read_only)
        if isinstance(replayed, str):
            return replayed
        readings, texts = replayed
        if proposal.derive is not None:
            try:
                answer = proposal.derive(readings)
            except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:  # another shape now
                return f"its answer could not be derived from the replayed results: {type(exc).__name__}"
            if answer is None:
                return "the replayed result no longer holds what the question is about"
            if answer != proposal.expected_result:
                shown = orjson.dumps(answer, default=str).decode()[:120]
                return f"the replayed result gives {shown}, not {_show(proposal.expected_result)}"
        else:
            missing = [
                v for v in scalars(proposal.expected_result) if not found_in(v, readings[-1], texts[-1])
            ]
            if missing:
                return f"the replayed result does not contain {', '.join(_show(v) for v in missing[:3])}"
            answer = proposal.expected_result
        answers.append(answer)
        singles.append(readings[-1].single)
        facts.append([fingerprint(reading, now) for reading in readings])
    if answers[0] != answers[-1]:
        return "two replays gave different answers: it changes from one call to the next"
    if facts[0] != facts[-1]:  # a random draw can give the same yes or no twice; its numbers do not
        return "two replays gave different results (other than ids and the time): they change between calls"
    moving = volatile(
        proposal.expected_result, singles[0] if len(proposal.reference_calls) == 1 else None, now
    )
    if moving is not None:
        return f"it depends on the clock ({moving}): the answer would change"
    if gives_away(proposal):
        return "the prompt gives its answer away"
    stated = answer_text(proposal.expected_result)
    verdict = check_deterministic(stated, identifying_payload(proposal.expected_result, expected=True))
    if not verdict.correct and verdict.status != "unchecked":
        return (
            f"the correctness check would not accept an answer that states it ({stated!r}): {verdict.reason}"
        )
    if verdict.status == "unchecked":
        return "the correctness check finds nothing to look for in its answer"
    return None


def replay(
    server: ServerUnderTest,
    tools: dict[str, mcp_types.Tool],
    calls: list[tuple[str, dict[str, Any]]],
    timeout_s: float,
    read_only: Collection[str] = (),
) -> tuple[list[Reading], list[str]] | str:
    """The calls' results, read; or why a call could not be made or failed."""
    readings, texts = [], []
    for number, (name, arguments) in enumerate(calls, start=1):
        tool = tools.get(name)
        if tool is None:
            return f"reference call {number}: the server has no tool '{name}'"
        if (risk := write_risk(tool, trusted=name in read_only)) is not None:
            return f"reference call {number}: '{name}' may change state ({risk})"
        try:
            result = server.call_tool(name, arguments, timeout_s)
        except Exception as exc:  # a refusal, a halt: the answer is not reproduced either way
            return (
                f"reference call {number} ({name}) failed: {type(exc).__name__}: {str(exc).splitlines()[0]}"
            )
        if result.is_error:
            return f"reference call {number} ({name}) failed: {result_text(result).strip()[:200]}"
        readings.append(read_result(result))
        texts.append(result_text(result))
    return readings, texts


def fingerprint(reading: Reading, now: datetime) -> Any:
    """What a result says, without what may differ on every call of a stable server: identifiers (a
    request id) and moments near now (a time stamp)."""

    def kept(record: dict[str, Any]) -> dict[str, Any]:
        return {
            key: value
            for key, value in record.items()
            if not is_id_name(key)
            and not (isinstance(value, str) and IDENTIFIER.match(value) and re.search(r"\d", value))
            and volatile(value, None, now) is None
        }

    return (
        [[kept(record) for record in table.records] for table in reading.tables],
        kept(reading.single or {}),
    )


def answer_text(expected: Any) -> str:
    """The expected result as an agent would state it: `yes`/`no`, a number, names joined by commas."""
    if isinstance(expected, bool):
        return "yes" if expected else "no"
    if isinstance(expected, dict):
        return ", ".join(answer_text(value) for value in expected.values())
    if isinstance(expected, list):
        return ", ".join(answer_text(value) for value in expected) or "none"
    if isinstance(expected, float) and expected.is_integer():
        return str(int(expected))  # 12.0 is said "12"
    return str(expected)


def gives_away(proposal: Proposal) -> bool:
    """Whether the values of the answer are already written in the prompt (yes/no and digits excepted)."""
    values = [
        v
        for v in scalars(proposal.expected_result)
        if not isinstance(v, bool) and not (isinstance(v, int | float) and abs(v) < 10)
    ]
    asked = Haystack([proposal.prompt])
    return bool(values) and all(asked.contains(v, strict=True) for v in values)


def volatile(expected: Any, single: dict[str, Any] | None, now: datetime) -> str | None:
    """A value of the answer (or of the single record it came from) within the window around now."""
    for value in [*scalars(expected), *scalars(single or {})]:
        moment = _moment(value)
        if moment is not None and abs(moment - now) <= VOLATILE_WINDOW:
            return f"{value} is within a day of now"
    return None


def _moment(value: Any) -> datetime | None:
    if (seconds := epoch(value)) is not None:
        return datetime.fromtimestamp(seconds, UTC)
    if not isinstance(value, str):
        return None
    iso = iso_moment(value)
    if iso is None:
        match = re.search(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2})?", value)
        iso = match[0] if match else None
    if iso is None:
        return None
    try:
        moment = datetime.fromisoformat(iso.replace("Z", "+00:00").replace(" +", "+"))
    except ValueError:
        try:
            moment = datetime.fromisoformat(iso[:10])
        except ValueError:
            return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def scalars(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for item in value.values():
            yield from scalars(item)
    elif isinstance(value, list):
        for item in value:
            yield from scalars(item)
    elif value is not None:
        yield value


def found_in(value: Any, reading: Reading, text: str) -> bool:
    """Whether `value` is a value of the result: a JSON scalar, a list's length, or written in the text."""
    if reading.json is not None and _in_json(value, reading.json):
        return True
    if isinstance(value, int) and not isinstance(value, bool):
        if any(len(table.records) == value for table in reading.tables):
            return True
    return bool(text) and not isinstance(value, bool) and Haystack([text]).contains(value, strict=True)


def _in_json(value: Any, document: Any) -> bool:
    if isinstance(document, dict):
        return any(_in_json(value, item) for item in document.values())
    if isinstance(document, list):
        if isinstance(value, int) and not isinstance(value, bool) and len(document) == value:
            return True
        return any(_in_json(value, item) for item in document)
    if isinstance(value, bool) or isinstance(document, bool):
        return value is document
    if isinstance(value, int | float) and isinstance(document, int | float):
        return float(value) == float(document)
    if isinstance(value, str) and isinstance(document, str):
        return value.strip().lower() == document.strip().lower()
    if isinstance(value, str) and isinstance(document, int | float):
        return value.strip() == str(document)
    return False


def _show(value: Any) -> str:
    return orjson.dumps(value, default=str).decode()
