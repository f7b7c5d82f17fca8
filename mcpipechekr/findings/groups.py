"""Candidate issues: captured calls grouped the way promotion looks at them.

Two kinds of group, both from captured calls only (the harness's own probe
calls are never evidence):

- errors: failing calls (`outcome: error`) of one server and tool with one
  error template id. Calls annotated `expected` (linked) are left out.
- false successes: successful calls of one server and tool that a linked
  `false-success` annotation names.

The rate's denominator is every captured call of the group's server and tool,
whatever its outcome (malformed results included: they were calls too).
Everything is aggregated in SQLite; only the per-group lists (codes, shapes,
window turns) come back to Python.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

import orjson

GroupKind = Literal["error", "false_success"]
MAX_SHAPES = 5
"""Argument shapes kept per finding: the most frequent ones."""


@dataclass(frozen=True)
class GroupKey:
    kind: GroupKind
    server: str
    tool: str
    template_id: str | None = None

    @property
    def finding_id(self) -> str:
        """`finding-` + 16 hex of a hash of the key: stable across rebuilds (template ids are salted once)."""
        if self.kind == "false_success":
            seed = f"false-success:{self.server}\0{self.tool}"
        else:
            seed = f"captured:{self.server}\0{self.tool}\0{self.template_id or ''}"
        return "finding-" + hashlib.sha256(seed.encode()).hexdigest()[:16]


@dataclass
class Group:
    """Aggregates of one candidate issue."""

    key: GroupKey
    failures: int
    calls: int
    sessions: int
    first_seen: datetime
    last_seen: datetime
    err_codes: Counter[str] = field(default_factory=Counter)
    retryable_true: int = 0
    retryable_false: int = 0
    shapes: Counter[str] = field(default_factory=Counter)
    turns: list[int] = field(default_factory=list)
    blast_radius: int = 1

    @property
    def rate(self) -> float:
        return min(1.0, self.failures / self.calls) if self.calls else 0.0

    @property
    def retryable(self) -> bool | None:
        """True when every failure said it was retryable, False when every one said not, else None."""
        if self.retryable_true == self.failures:
            return True
        if self.retryable_false == self.failures:
            return False
        return None

    @property
    def most_frequent_code(self) -> str | None:
        if not self.err_codes:
            return None
        return min(self.err_codes.items(), key=lambda item: (-item[1], item[0]))[0]

    def top_shapes(self) -> list[dict[str, str]]:
        ranked = sorted(self.shapes.items(), key=lambda item: (-item[1], item[0]))[:MAX_SHAPES]
        return [flatten_shape(orjson.loads(text)) for text, _ in ranked]


def parse_time(text: str) -> datetime:
    """An index timestamp as an aware datetime (UTC assumed where the offset is missing)."""
    value = datetime.fromisoformat(text)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def flatten_shape(shape: object, prefix: str = "") -> dict[str, str]:
    """A shape as flat `key → type`, nested objects as dotted keys, so every finding has one form."""
    if not isinstance(shape, dict):
        return {prefix or "(arguments)": str(shape)}
    flat: dict[str, str] = {}
    for key, value in shape.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict) and value:
            flat.update(flatten_shape(value, name))
        else:
            flat[name] = value if isinstance(value, str) else orjson.dumps(value).decode()
    return flat


def _exclusion_tables(
    index: sqlite3.Connection, expected: Iterable[str], false_success: Iterable[str]
) -> None:
    index.execute("CREATE TEMP TABLE IF NOT EXISTS promote_expected (event_id TEXT PRIMARY KEY)")
    index.execute("CREATE TEMP TABLE IF NOT EXISTS promote_false_success (event_id TEXT PRIMARY KEY)")
    index.execute("DELETE FROM promote_expected")
    index.execute("DELETE FROM promote_false_success")
    index.executemany("INSERT OR IGNORE INTO promote_expected VALUES (?)", [(e,) for e in expected])
    index.executemany("INSERT OR IGNORE INTO promote_false_success VALUES (?)", [(e,) for e in false_success])


_FAILING = (
    "c.probe = 0 AND c.outcome = 'error' AND c.event_id NOT IN (SELECT event_id FROM temp.promote_expected)"
)
_FALSE_SUCCESS = (
    "c.probe = 0 AND c.outcome = 'ok' AND c.event_id IN (SELECT event_id FROM temp.promote_false_success)"
)


def collect_groups(
    index: sqlite3.Connection, *, expected: Iterable[str] = (), false_success: Iterable[str] = ()
) -> list[Group]:
    """Every candidate issue in the index, error groups and false-success groups, in key order.

    ``expected`` and ``false_success`` are the event ids of linked annotations
    of those kinds.
    """
    _exclusion_tables(index, expected, false_success)
    totals = {
        (server, tool): count
        for server, tool, count in index.execute(
            "SELECT server, tool, COUNT(*) FROM calls WHERE probe = 0 GROUP BY server, tool"
        )
    }
    groups: dict[GroupKey, Group] = {}
    for kind, where, template in (
        ("error", _FAILING, "c.template_id"),
        ("false_success", _FALSE_SUCCESS, "NULL"),
    ):
        for server, tool, template_id, failures, sessions, first, last, yes, no in index.execute(
            f"SELECT c.server, c.tool, {template}, COUNT(*), COUNT(DISTINCT c.session), MIN(c.at), MAX(c.at),"
            " SUM(c.retryable = 1), SUM(c.retryable = 0)"
            f" FROM calls c WHERE {where} GROUP BY 1, 2, 3"
        ):
            key = GroupKey(kind, server, tool, template_id)  # type: ignore[arg-type]
            groups[key] = Group(
                key=key,
                failures=failures,
                calls=totals.get((server, tool), failures),
                sessions=sessions,
                first_seen=parse_time(first),
                last_seen=parse_time(last),
                retryable_true=yes or 0,
                retryable_false=no or 0,
            )
        for server, tool, template_id, shape, count in index.execute(
            f"SELECT c.server, c.tool, {template}, c.arg_shape, COUNT(*) FROM calls c WHERE {where}"
            " GROUP BY 1, 2, 3, 4"
        ):
            groups[GroupKey(kind, server, tool, template_id)].shapes[shape] = count  # type: ignore[arg-type]
    for server, tool, template_id, code, count in index.execute(
        f"SELECT c.server, c.tool, c.template_id, c.err_code, COUNT(*) FROM calls c WHERE {_FAILING}"
        " AND c.err_code IS NOT NULL GROUP BY 1, 2, 3, 4"
    ):
        groups[GroupKey("error", server, tool, template_id)].err_codes[code] = count
    for server, tool, template_id, turns in index.execute(
        "SELECT c.server, c.tool, c.template_id, w.turns FROM failure_windows w"
        f" JOIN calls c ON c.event_id = w.event_id WHERE {_FAILING}"
    ):
        groups[GroupKey("error", server, tool, template_id)].turns.append(turns)
    radius: dict[tuple[str, str], int] = defaultdict(lambda: 1)
    for server, template_id, tools in index.execute(
        f"SELECT c.server, c.template_id, COUNT(DISTINCT c.tool) FROM calls c WHERE {_FAILING}"
        " AND c.template_id IS NOT NULL GROUP BY 1, 2"
    ):
        radius[(server, template_id)] = tools
    for key, group in groups.items():
        if key.kind == "error" and key.template_id is not None:
            group.blast_radius = radius[(key.server, key.template_id)]
    return sorted(
        groups.values(),
        key=lambda g: (g.key.kind, g.key.server, g.key.tool, g.key.template_id or ""),
    )
