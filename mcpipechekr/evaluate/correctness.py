"""Correctness against the baseline: is the final answer the accepted one?

Deterministic tasks. The baseline's *identifying values* (see
`identifying_values`) must appear in the final answer, by the matching rule of
`evaluate.matching`. A result is turned into groups of alternatives:

- a scalar (a count, a name) is one group of one value; all must appear;
- a record (an object with `id`, `subject`, `title`, `name`, `sender_name`,
  `date`, ...) is one group whose alternatives are those values: naming the
  id OR the subject OR the date identifies it;
- a free-text result (a phase-0 agent's answer) pins down its days, numbers
  of two or more digits and e-mail addresses; all must appear;
- a list of records needs only ONE of its records identified (`match: any`):
  the reference calls of "find the earliest X" return the candidates, not the
  winner, and "list the X" answers name the records by different fields.
  A task that needs a sharper check sets `expected_result` (its scalars must
  then all appear).

Open-ended tasks. Lexical similarity: the overlap coefficient of the content
words (4+ letters, no stop words), numbers and days of the answer and of the
baseline result, |A ∩ B| / min(|A|, |B|). An answer drawn from the same
material scores high even when it is much shorter. Divergence (1 - similarity)
above `thresholds.open_ended_divergence` is flagged for human review, not
reported as a bug.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from mcpipechekr.evaluate.base import records_of
from mcpipechekr.evaluate.matching import Haystack, as_day, dates_in, normalise

IDENTIFYING_KEYS = ("id", "uuid", "key", "name", "title", "subject", "sender_name", "date", "created_at")
_ISO_OR_WORD_DATE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}(?:[T ][\d:.]+)?|\b\d{1,2}(?:st|nd|rd|th)?\s+[A-Za-z]{3,9}\.?,?\s+\d{4}\b"
    r"|\b[A-Za-z]{3,9}\.?\s+\d{1,2}(?:st|nd|rd|th)?,?\s+\d{4}\b"
)
_WORD = re.compile(r"[a-z][a-z'-]{3,}|\d{2,}")
STOP_WORDS = frozenset(
    """about above after again against also among another been before being below between both cannot
    could does doing down during each even ever every from further have having here hers herself himself
    into itself just least less made make many more most much must myself never none only other ours
    over same shall should since some such than that their theirs them themselves then there these they
    this those through under until upon very were what when where which while whom whose will with
    within without would your yours yourself""".split()
)


@dataclass(frozen=True)
class Identifying:
    """Groups of alternative values; `match` says whether all groups or any one must appear."""

    groups: tuple[tuple[Any, ...], ...]
    match: str = "all"


def _record_group(record: dict[str, Any]) -> tuple[Any, ...]:
    values = [record[key] for key in IDENTIFYING_KEYS if key in record and record[key] not in (None, "")]
    if not values:
        values = [value for value in record.values() if isinstance(value, str | int | float)][:3]
    return tuple(values)


def _salient(text: str) -> list[str]:
    """What a free-text result pins down: its days, numbers of 2+ digits and e-mail addresses."""
    days = dates_in(text)
    without_days = _ISO_OR_WORD_DATE.sub(" ", text)
    numbers = {match.replace(",", "") for match in re.findall(r"\b\d[\d,]*\d\b", without_days)}
    addresses = set(re.findall(r"[\w.+-]+@[\w-]+\.[\w.]+", text))
    return sorted(days | numbers | addresses)


def identifying_values(result: Any) -> Identifying:
    """The values an answer must name for a result, by the rules in the module docstring."""
    if isinstance(result, dict) and "values" in result and "match" in result:
        groups = tuple(tuple(group) if isinstance(group, list) else (group,) for group in result["values"])
        return Identifying(groups, str(result["match"]))
    if isinstance(result, str):
        return Identifying(tuple((value,) for value in _salient(result)))
    if isinstance(result, int | float) and not isinstance(result, bool):
        return Identifying(((result,),))
    records = records_of(result)
    if records:
        return Identifying(tuple(_record_group(record) for record in records), "any")
    if isinstance(result, dict):
        if any(key in result for key in IDENTIFYING_KEYS):
            return Identifying((_record_group(result),))
        scalars = [value for value in result.values() if isinstance(value, str | int | float)]
        return Identifying(tuple((value,) for value in scalars))
    if isinstance(result, list):
        return Identifying(tuple((value,) for value in result if isinstance(value, str | int | float)))
    return Identifying(())


def identifying_payload(result: Any) -> dict[str, Any]:
    """`{"values": [[...], ...], "match": "all"|"any"}`: identifying values as stored in baseline.json."""
    found = identifying_values(result)
    return {"values": [list(group) for group in found.groups], "match": found.match}


@dataclass(frozen=True)
class Verdict:
    correct: bool
    missing: list[str]
    reason: str


def check_deterministic(answer: str | None, expected: Any) -> Verdict:
    """Whether the answer names the baseline's identifying values."""
    found = identifying_values(expected)
    if not found.groups:
        return Verdict(True, [], "the baseline names no values to look for")
    if not answer:
        return Verdict(False, [_show(group) for group in found.groups], "no final answer")
    haystack = Haystack([answer])
    hits = [any(haystack.contains(value, strict=True) for value in group) for group in found.groups]
    missing = [_show(group) for group, hit in zip(found.groups, hits, strict=True) if not hit]
    if found.match == "any":
        ok = any(hits)
        reason = "names one of the expected records" if ok else "names none of the expected records"
        return Verdict(ok, [] if ok else missing, reason)
    ok = all(hits)
    return Verdict(ok, missing, "names every expected value" if ok else f"misses {', '.join(missing)}")


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
