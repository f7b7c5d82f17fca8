"""Annotations: what a person knows about one captured call that the record cannot say.

An annotation names a call by its event id and says one of:

- `false-success`: the call reported success but did not do what was asked.
  Linked false successes of a server and tool form their own group
  (class `false_success`), promoted like any other.
- `expected`: the error was the right answer (the thing asked for really does
  not exist); the call no longer counts as a failure of its group.
- `workaround`: how the caller got around the failure; kept for people,
  it changes no score.

Annotations are stored in lifecycle.db whatever the index holds, because the
index is rebuilt and journals arrive late. Each `promote` resolves every
annotation again against the current index:

- `linked`: the event is a captured call the kind fits (a success for
  `false-success`, an error for `expected` and `workaround`);
- `unknown`: no call with that event id is indexed (yet);
- `ambiguous`: the event is indexed but the annotation cannot be taken at its
  word: the kind does not fit the call's outcome, the call is the harness's
  own probe, or another annotation on the same event says the opposite.

Only linked annotations change findings. Notes are stored for people and
never appear in findings output.
"""

from __future__ import annotations

import sqlite3
import unicodedata
import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from mcpipechekr.artifacts._base import utc_now
from mcpipechekr.errors import UserError
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.store import lifecycle_connection

AnnotationKind = Literal["workaround", "false-success", "expected"]
ANNOTATION_KINDS: tuple[AnnotationKind, ...] = ("workaround", "false-success", "expected")
AnnotationStatus = Literal["linked", "unknown", "ambiguous"]
MAX_NOTE_CHARS = 240

_FITS: dict[str, set[str]] = {
    "false-success": {"ok"},
    "expected": {"error"},
    "workaround": {"error"},
}
_CONFLICTS: set[frozenset[str]] = {
    frozenset({"expected", "workaround"}),
    frozenset({"expected", "false-success"}),
}
_LOOKUP_CHUNK = 500


@dataclass(frozen=True)
class Annotation:
    """One stored annotation and what the last resolution made of it."""

    id: int
    event_id: str
    kind: str
    note: str
    status: AnnotationStatus


@dataclass(frozen=True)
class IndexedCall:
    """What resolution needs to know of the call an annotation names."""

    event_id: str
    server: str
    tool: str
    template_id: str | None
    outcome: str
    probe: bool


def normalize_event_id(value: str) -> str:
    """The canonical spelling (lowercase, hyphenated) of a UUID; a UserError naming --event-id if not one."""
    try:
        return str(uuid.UUID(value.strip()))
    except ValueError:
        raise UserError(
            f"--event-id: `{value[:60]}` is not a UUID; use the `event_id` of a call record "
            "(e.g. 0b6f3c1e-8d2a-4c55-9a63-2f1d7e4b9c10)."
        ) from None


def check_note(note: str) -> str:
    """A note is one line of at most 240 characters without control characters; a UserError otherwise."""
    if not note.strip():
        raise UserError("--note: must not be empty.")
    if len(note) > MAX_NOTE_CHARS:
        raise UserError(f"--note: {len(note)} characters; at most {MAX_NOTE_CHARS} are kept. Shorten it.")
    for position, char in enumerate(note, start=1):
        if unicodedata.category(char) == "Cc" or char in "\u2028\u2029":
            raise UserError(
                f"--note: character {position} is a control character (U+{ord(char):04X}); "
                "a note is one line of plain text."
            )
    return note


def check_kind(kind: str) -> str:
    """One of ``ANNOTATION_KINDS``; a UserError naming --kind otherwise."""
    if kind not in ANNOTATION_KINDS:
        raise UserError(f"--kind: `{kind}` is not a kind; use one of {', '.join(ANNOTATION_KINDS)}.")
    return kind


def add_annotation(home: Home, event_id: str, kind: str, note: str) -> Annotation:
    """Validate and store an annotation, unlinked until the next `promote` resolves it."""
    event = normalize_event_id(event_id)
    check_kind(kind)
    check_note(note)
    with lifecycle_connection(home) as conn, conn:
        cursor = conn.execute(
            "INSERT INTO annotations (event_id, kind, note, created_at, status)"
            " VALUES (?, ?, ?, ?, 'unknown')",
            (event, kind, note, utc_now().isoformat()),
        )
        row_id = cursor.lastrowid
    assert row_id is not None
    return Annotation(row_id, event, kind, note, "unknown")


def list_annotations(conn: sqlite3.Connection) -> list[Annotation]:
    """Every stored annotation, oldest first."""
    rows = conn.execute("SELECT id, event_id, kind, note, status FROM annotations ORDER BY id").fetchall()
    return [Annotation(*row) for row in rows]


def indexed_calls(index: sqlite3.Connection, event_ids: Iterable[str]) -> dict[str, IndexedCall]:
    """The indexed calls among ``event_ids``, by event id."""
    wanted = sorted(set(event_ids))
    found: dict[str, IndexedCall] = {}
    for start in range(0, len(wanted), _LOOKUP_CHUNK):
        chunk = wanted[start : start + _LOOKUP_CHUNK]
        marks = ",".join("?" * len(chunk))
        for row in index.execute(
            "SELECT event_id, server, tool, template_id, outcome, probe FROM calls"
            f" WHERE event_id IN ({marks})",
            chunk,
        ):
            found[row[0]] = IndexedCall(row[0], row[1], row[2], row[3], row[4], bool(row[5]))
    return found


def resolve(
    annotations: list[Annotation], calls: dict[str, IndexedCall]
) -> dict[int, tuple[AnnotationStatus, IndexedCall | None]]:
    """Status of every annotation against the indexed calls (rules in the module docstring)."""
    kinds_by_event: dict[str, set[str]] = defaultdict(set)
    for annotation in annotations:
        kinds_by_event[annotation.event_id].add(annotation.kind)
    resolved: dict[int, tuple[AnnotationStatus, IndexedCall | None]] = {}
    for annotation in annotations:
        call = calls.get(annotation.event_id)
        if call is None:
            resolved[annotation.id] = ("unknown", None)
            continue
        kinds = kinds_by_event[annotation.event_id]
        conflicting = any(pair <= kinds for pair in _CONFLICTS)
        fits = call.outcome in _FITS.get(annotation.kind, set())
        status: AnnotationStatus = "linked" if fits and not call.probe and not conflicting else "ambiguous"
        resolved[annotation.id] = (status, call)
    return resolved


def store_resolution(
    conn: sqlite3.Connection, resolution: dict[int, tuple[AnnotationStatus, str | None]]
) -> None:
    """Record each annotation's status and the finding it feeds; call inside a transaction."""
    conn.executemany(
        "UPDATE annotations SET status = ?, finding_id = ? WHERE id = ?",
        [(status, finding_id, annotation_id) for annotation_id, (status, finding_id) in resolution.items()],
    )
