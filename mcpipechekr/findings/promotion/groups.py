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


_EVIDENCE_TABLE = """
CREATE TEMP TABLE IF NOT EXISTS promote_evidence (
    kind TEXT, server TEXT, tool TEXT, template_id TEXT, session TEXT, at TEXT,
    retryable INTEGER, arg_shape TEXT, err_code TEXT, event_id TEXT
)
"""


def _evidence_table(index: sqlite3.Connection, expected: Iterable[str], false_success: Iterable[str]) -> None:
    """Copy the calls promotion looks at into one temporary table: one pass over `calls`, not one per query.

    Temporary tables live outside the (read-only) index file and vanish with the connection.
    """
    for table in ("promote_expected", "promote_false_success"):
        index.execute(f"CREATE TEMP TABLE IF NOT EXISTS {table} (event_id TEXT PRIMARY KEY)")
        index.execute(f"DELETE FROM temp.{table}")
    index.executemany("INSERT OR IGNORE INTO temp.promote_expected VALUES (?)", [(e,) for e in expected])
    index.executemany(
        "INSERT OR IGNORE INTO temp.promote_false_success VALUES (?)", [(e,) for e in false_success]
    )
    index.execute(_EVIDENCE_TABLE)
    index.execute("DELETE FROM temp.promote_evidence")
    index.execute(
        "INSERT INTO temp.promote_evidence SELECT 'error', server, tool, template_id, session, at, retryable,"
        " arg_shape, err_code, event_id FROM calls WHERE probe = 0 AND outcome = 'error'"
        " AND event_id NOT IN (SELECT event_id FROM temp.promote_expected)"
    )
    index.execute(
        "INSERT INTO temp.promote_evidence SELECT 'false_success', server, tool, NULL, session, at, NULL,"
        " arg_shape, NULL, event_id FROM calls WHERE probe = 0 AND outcome = 'ok'"
        " AND event_id IN (SELECT event_id FROM temp.promote_false_success)"
    )


def _captured_calls(index: sqlite3.Connection) -> dict[tuple[str, str], int]:
    """Captured calls per server and tool: all calls (counted on the index) less the probes (few)."""
    totals: Counter[tuple[str, str]] = Counter()
    for server, tool, count in index.execute("SELECT server, tool, COUNT(*) FROM calls GROUP BY 1, 2"):
        totals[(server, tool)] += count
    for server, tool, count in index.execute(
        "SELECT server, tool, COUNT(*) FROM calls NOT INDEXED WHERE probe != 0 GROUP BY 1, 2"
    ):
        totals[(server, tool)] -= count
    return dict(totals)


def collect_groups(
    index: sqlite3.Connection, *, expected: Iterable[str] = (), false_success: Iterable[str] = ()
) -> list[Group]:
    """Every candidate issue in the index, error groups and false-success groups, in key order.

    ``expected`` and ``false_success`` are the event ids of linked annotations
    of those kinds.
    """
    _evidence_table(index, expected, false_success)
    totals = _captured_calls(index)
    groups: dict[GroupKey, Group] = {}
    for kind, server, tool, template_id, failures, sessions, first, last, yes, no in index.execute(
        "SELECT kind, server, tool, template_id, COUNT(*), COUNT(DISTINCT session), MIN(at), MAX(at),"
        " SUM(retryable = 1), SUM(retryable = 0) FROM temp.promote_evidence GROUP BY 1, 2, 3, 4"
    ):
        key = GroupKey(kind, server, tool, template_id)
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
    for kind, server, tool, template_id, shape, count in index.execute(
        "SELECT kind, server, tool, template_id, arg_shape, COUNT(*) FROM temp.promote_evidence"
        " GROUP BY 1, 2, 3, 4, 5"
    ):
        groups[GroupKey(kind, server, tool, template_id)].shapes[shape] = count
    for server, tool, template_id, code, count in index.execute(
        "SELECT server, tool, template_id, err_code, COUNT(*) FROM temp.promote_evidence"
        " WHERE kind = 'error' AND err_code IS NOT NULL GROUP BY 1, 2, 3, 4"
    ):
        groups[GroupKey("error", server, tool, template_id)].err_codes[code] = count
    for server, tool, template_id, turns in index.execute(
        "SELECT e.server, e.tool, e.template_id, w.turns FROM temp.promote_evidence e"
        " JOIN failure_windows w ON w.event_id = e.event_id WHERE e.kind = 'error'"
    ):
        groups[GroupKey("error", server, tool, template_id)].turns.append(turns)
    radius: dict[tuple[str, str], int] = defaultdict(lambda: 1)
    for server, template_id, tools in index.execute(
        "SELECT server, template_id, COUNT(DISTINCT tool) FROM temp.promote_evidence"
        " WHERE kind = 'error' AND template_id IS NOT NULL GROUP BY 1, 2"
    ):
        radius[(server, template_id)] = tools
    for key, group in groups.items():
        if key.kind == "error" and key.template_id is not None:
            group.blast_radius = radius[(key.server, key.template_id)]
    return sorted(
        groups.values(),
        key=lambda g: (g.key.kind, g.key.server, g.key.tool, g.key.template_id or ""),
    )
