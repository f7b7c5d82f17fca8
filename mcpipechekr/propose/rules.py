"""The rules that derive an answer from the results of a task's reference calls.

A proposal's answer is never taken on trust: each shape (`shapes.py`,
`chains.py`) pairs its question with one of these rules, and verification
(`verify.py`) applies the rule again to the results of a fresh server. A rule
finds its table by where it sat in the result (`table_in`), its record by the
name the prompt quotes (`record_named`), and answers None when the results no
longer hold what the question is about (a record gone, a listing now partial),
which refuses the task. The helpers here also rank (`order_kind`,
`extreme`) and filter (`holds`) records for the shapes that ask about them.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from mcpipechekr.evaluate.matching import as_day
from mcpipechekr.propose.explore import name_key
from mcpipechekr.propose.reading import Reading, Table, as_number, words
from mcpipechekr.propose.templates import TIME_WORDS

MAX_CATEGORY = 40
"""Longest value a filter or comparison quotes."""


def table_in(reading: Reading, key: str, label: str) -> Table | None:
    return next((t for t in reading.tables if t.key == key and t.label == label), None)


def record_named(table: Table | None, field: str, name: str) -> dict[str, Any] | None:
    if table is None:
        return None
    hits = [r for r in table.records if r.get(field) == name]
    return hits[0] if len(hits) == 1 else None


def iso_moment(value: Any) -> str | None:
    """The moment a value names, sortable (ISO), or None: ISO dates and date-times, and the long form
    some servers print (`Sat Dec 05 2026 03:33:23 GMT+0000`)."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2}|\s*[+-]\d{4})?)?", text):
        return text if as_day(text[:10]) else None
    try:
        return datetime.strptime(text[:24], "%a %b %d %Y %H:%M:%S").isoformat()
    except ValueError:
        return None


def epoch(value: Any) -> float | None:
    """Unix time in seconds, for a number in the range of seconds or milliseconds since 2001."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if 1e9 <= value < 1e10:
        return float(value)
    if 1e12 <= value < 1e13:
        return value / 1000
    return None


def values_of(records: list[dict[str, Any]], key: str) -> list[Any]:
    return [r.get(key) for r in records]


def category(value: Any) -> bool:
    return (
        isinstance(value, str)
        and 0 < len(value) <= MAX_CATEGORY
        and "\n" not in value
        and iso_moment(value) is None
    )


def holds(record: dict[str, Any], key: str, value: Any) -> bool:
    held = record.get(key)
    return value in held if isinstance(held, list) else held == value


def common_name_key(records: list[dict[str, Any]]) -> str | None:
    keys = {name_key(r) for r in records}
    return keys.pop() if len(keys) == 1 else None


def fields_of(records: list[dict[str, Any]]) -> list[str]:
    keys: dict[str, None] = {}
    for record in records:
        keys.update(dict.fromkeys(record))
    return list(keys)


def order_kind(values: list[Any], field: str = "") -> str | None:
    """How a field's values are ordered: `date` (ISO text, or Unix time under a field named for a
    time), `number`, or None."""
    if not values or any(v is None for v in values):
        return None
    if all(iso_moment(v) for v in values):
        return "date"
    if set(words(field)) & TIME_WORDS and all(epoch(v) for v in values):
        return "date"
    if all(as_number(v) is not None for v in values) and not all(
        isinstance(v, str) and v.isdigit() for v in values
    ):
        return "number"
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return "number"
    return None


def sort_key(value: Any, kind: str) -> Any:
    if kind == "date":
        return iso_moment(value) if isinstance(value, str) else epoch(value)
    return as_number(value)


def extreme(records: list[dict[str, Any]], field: str, kind: str, highest: bool) -> dict[str, Any] | None:
    keyed = [(sort_key(r.get(field), kind), r) for r in records]
    if any(k is None for k, _ in keyed):
        return None
    best = (max if highest else min)(k for k, _ in keyed)
    winners = [r for k, r in keyed if k == best]
    return winners[0] if len(winners) == 1 else None


def field_of(key: str, label: str, named: str, name: Any, field: str) -> Any:
    def derive(readings: list[Reading]) -> Any:
        record = record_named(table_in(readings[-1], key, label), named, name)
        return None if record is None else record.get(field)

    return derive


def length_of(key: str, label: str, named: str, name: Any, field: str) -> Any:
    def derive(readings: list[Reading]) -> Any:
        record = record_named(table_in(readings[-1], key, label), named, name)
        held = None if record is None else record.get(field)
        return len(held) if isinstance(held, list) else None

    return derive


def filtered(key: str, label: str, field: str, value: Any, named: str | None) -> Any:
    def derive(readings: list[Reading]) -> Any:
        table = table_in(readings[-1], key, label)
        if table is None or not table.complete:
            return None
        hits = [r for r in table.records if holds(r, field, value)]
        return len(hits) if named is None else [r.get(named) for r in hits]

    return derive


def both(key: str, label: str, first: tuple[str, Any], second: tuple[str, Any]) -> Any:
    def derive(readings: list[Reading]) -> Any:
        table = table_in(readings[-1], key, label)
        if table is None or not table.complete:
            return None
        if not any(holds(r, *first) for r in table.records) or not any(
            holds(r, *second) for r in table.records
        ):
            return None  # a value no longer occurs: the question no longer makes sense
        return sum(1 for r in table.records if holds(r, *first) and holds(r, *second))

    return derive


def extreme_of(key: str, label: str, named: str, field: str, kind: str, highest: bool) -> Any:
    def derive(readings: list[Reading]) -> Any:
        table = table_in(readings[-1], key, label)
        if table is None or not table.complete:
            return None
        winner = extreme(table.records, field, kind, highest)
        return None if winner is None else winner.get(named)

    return derive


def ordered(key: str, label: str, named: str, a: Any, b: Any, field: str, kind: str) -> Any:
    def derive(readings: list[Reading]) -> Any:
        table = table_in(readings[-1], key, label)
        ra, rb = record_named(table, named, a), record_named(table, named, b)
        if ra is None or rb is None:
            return None
        ka, kb = sort_key(ra.get(field), kind), sort_key(rb.get(field), kind)
        return None if ka is None or kb is None or ka == kb else ka > kb

    return derive


def alike(key: str, label: str, named: str, a: Any, b: Any, field: str) -> Any:
    def derive(readings: list[Reading]) -> Any:
        table = table_in(readings[-1], key, label)
        ra, rb = record_named(table, named, a), record_named(table, named, b)
        return None if ra is None or rb is None else ra.get(field) == rb.get(field)

    return derive


def only_name(reading: Reading, key: str, label: str, named: str) -> Any:
    table = table_in(reading, key, label)
    return table.records[0].get(named) if table is not None and len(table.records) == 1 else None


def edge_rule(
    where: tuple[str, str],
    start: tuple[str, Any],
    kind: tuple[str, Any] | None,
    target: str,
    one: bool,
    count: bool = False,
) -> Any:
    def derive(readings: list[Reading]) -> Any:
        table = table_in(readings[-1], *where)
        if table is None or not table.complete:
            return None
        hits = [
            r.get(target) for r in table.records if holds(r, *start) and (kind is None or holds(r, *kind))
        ]
        if count:
            return len(hits)
        return (hits[0] if len(hits) == 1 else None) if one else hits

    return derive


def hop_rule(
    where: tuple[tuple[str, str], tuple[str, str, str]],
    start: tuple[str, Any],
    kind: tuple[str, Any],
    target: str,
    end: Any,
    field: str,
) -> Any:
    """The first result's relation of this kind from `start` still leads to `end` alone, then `field`
    of `end`'s record in the last result."""
    (edge_key, edge_label), (node_key, node_label, named) = where

    def derive(readings: list[Reading]) -> Any:
        hits = [
            r.get(target)
            for r in _records(readings[0], edge_key, edge_label)
            if holds(r, *start) and holds(r, *kind)
        ]
        if hits != [end]:
            return None
        record = record_named(table_in(readings[-1], node_key, node_label), named, end)
        return None if record is None else record.get(field)

    return derive


def _records(reading: Reading, key: str, label: str) -> list[dict[str, Any]]:
    table = table_in(reading, key, label)
    return [] if table is None else table.records


def named_pick(where: tuple[str, str, str], name: Any) -> Any:
    key, label, named = where
    return lambda reading: record_named(table_in(reading, key, label), named, name)


def extreme_pick(where: tuple[str, str, str], rank: str, kind: str, highest: bool) -> Any:
    key, label, _ = where

    def pick(reading: Reading) -> dict[str, Any] | None:
        table = table_in(reading, key, label)
        return None if table is None or not table.complete else extreme(table.records, rank, kind, highest)

    return pick


def then(pick: Any, link: tuple[str, Any], read: Any) -> Any:
    """The first call's record still leads to the second call (same link), then the second's answer."""

    def derive(readings: list[Reading]) -> Any:
        record = pick(readings[0])
        if record is None or not still_linked(record, link):
            return None
        return read(readings[-1])

    return derive


def count_of(listed: Any) -> Any:
    def derive(readings: list[Reading]) -> Any:
        names = listed(readings)
        return None if names is None else len(names)

    return derive


def names_in(reading: Reading, key: str, label: str, inner: str) -> list[Any] | None:
    table = table_in(reading, key, label)
    return None if table is None or not table.complete else [r.get(inner) for r in table.records]


def over_details(where: tuple, links: list[tuple[str, Any]], field: str, ask: tuple) -> Any:
    """The listing still holds the same records (of the kind asked about), each still leads to its
    details, then the answer over the details' `field`: the name of the record with its extreme, or
    how many hold a value."""
    key, label, named, kind_field, kind = where

    def derive(readings: list[Reading]) -> Any:
        table = table_in(readings[0], key, label)
        if table is None or not table.complete:
            return None
        records = [r for r in table.records if kind_field is None or r.get(kind_field) == kind]
        if len(records) != len(links):
            return None
        if not all(still_linked(r, link) for r, link in zip(records, links, strict=True)):
            return None
        values = [(reading.single or {}).get(field) for reading in readings[1:]]
        if any(v is None for v in values):
            return None
        if ask[0] == "count":
            return sum(1 for v in values if v == ask[1])
        _, order, highest = ask
        keyed = [sort_key(v, order) for v in values]
        if any(k is None for k in keyed):
            return None
        best = (max if highest else min)(keyed)
        return records[keyed.index(best)].get(named) if keyed.count(best) == 1 else None

    return derive


def swept(field: str, values: list[Any], ask: str, param: str) -> Any:
    """Over one call per value: the value whose answer holds the highest (or lowest) `field`, with
    that field, or whether the first's is larger than the second's."""

    def derive(readings: list[Reading]) -> Any:
        singles = [reading.single or {} for reading in readings]
        numbers = [as_number(single.get(field)) for single in singles]
        if any(n is None for n in numbers) or len(numbers) != len(values):
            return None
        if ask == "greater":
            return None if numbers[0] == numbers[1] else numbers[0] > numbers[1]
        best = (max if ask == "highest" else min)(n for n in numbers if n is not None)
        if numbers.count(best) != 1:
            return None
        return {param: values[numbers.index(best)], field: singles[numbers.index(best)][field]}

    return derive


def still_linked(record: dict[str, Any], link: tuple[str, Any]) -> bool:
    key, value = link
    if key == "path":
        name = record.get("name")
        return (
            isinstance(name, str)
            and isinstance(value, str)
            and value.rstrip("/").endswith("/" + name.strip("/"))
        )
    return record.get(key) == value
