"""Call records: one sanitized JSON line per tool call, the evidence every finding is built from.

A record keeps what lets failures be grouped and measured, and nothing a user
would not share: the error message becomes a salted template id (equal errors
group, the text is not stored), the arguments become their shape (keys and
JSON types, never values), and result payloads are not kept at all, only
their size. The salt lives in the home's `.salt` and never leaves it, so a
template id cannot be reversed by hashing guessed messages.

Two writers produce records: the passive `mcpipechekr capture` proxy (one
journal per proxy process, `passive.py`) and the Phase 1 harness, which
converts each attempt's capture journal with `phase1.records_from_journal` and
stores the result with `append_records`. Both pair requests with responses in
`tracker.CallTracker`, so the two can never disagree on what a record says.

Journals live in `<home>/journals/*.jsonl`. Their names start with the UTC
time the writer opened them, so name order is creation order; the indexer
relies on that (an append to an earlier file than the last one indexed costs
a full rebuild, see `index.py`).
"""

from __future__ import annotations

import hmac
import os
import re
import secrets
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from hashlib import sha256
from pathlib import Path
from typing import Any

from mcpipechekr.artifacts.atomic import atomic_write_bytes
from mcpipechekr.artifacts.call_record import (
    ERR_CODE_PATTERN,
    MAX_RECORD_BYTES,
    SESSION_PATTERN,
    TEMPLATE_ID_PATTERN,
    UUID_PATTERN,
    ArgType,
    CallRecord,
    Outcome,
)
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.locking import JournalLock

__all__ = [
    # the format, defined with the other file formats in artifacts/call_record.py
    "ERR_CODE_PATTERN",
    "MAX_RECORD_BYTES",
    "SESSION_PATTERN",
    "TEMPLATE_ID_PATTERN",
    "UUID_PATTERN",
    "ArgType",
    "CallRecord",
    "Outcome",
    # sanitizing and storing
    "MAX_KEYS",
    "MAX_KEY_CHARS",
    "MAX_TEMPLATE_CHARS",
    "append_records",
    "arg_shape",
    "event_id_for",
    "journal_name",
    "json_type",
    "normalize_message",
    "template_id",
]

MAX_KEY_CHARS = 64
MAX_KEYS = 64
MAX_TEMPLATE_CHARS = 2_000

_EVENT_NAMESPACE = uuid.UUID("8d0f6c1e-4a8e-4e53-9a40-2f7f3c1b5e11")


# --- sanitizing ------------------------------------------------------------------------------------

_NORMALIZERS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"[a-z][a-z0-9+.-]*://\S+", re.I), "<url>"),
    (re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"), "<email>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I), "<uuid>"),
    (re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`"), "<str>"),
    (re.compile(r"(?:[A-Za-z]:)?(?:[\\/][\w.~-]+){2,}[\\/]?"), "<path>"),
    (re.compile(r"\b(?=[0-9a-f]*\d)[0-9a-f]{8,}\b", re.I), "<hex>"),
    (re.compile(r"[-+]?\d+(?:[.,:]\d+)*"), "<n>"),
    (re.compile(r"\s+"), " "),
]


def normalize_message(message: str, tool: str | None = None) -> str:
    """The message with what varies between occurrences replaced by placeholders.

    URLs, e-mail addresses, UUIDs, quoted strings, paths, long hex runs and
    numbers vary from call to call while the failure stays the same; the tool's
    own name is replaced too, so one template shared by several tools shows as
    one (its blast radius). The result is lowercased and cut to a fixed length.
    """
    text = message.strip()
    if tool:
        text = text.replace(tool, "<tool>")
    for pattern, placeholder in _NORMALIZERS:
        text = pattern.sub(placeholder, text)
    return text.strip().lower()[:MAX_TEMPLATE_CHARS]


def template_id(salt: bytes, message: str, tool: str | None = None) -> str:
    """16 hex digits of HMAC-SHA256(salt, normalized message): groups equal errors without keeping them."""
    normalized = normalize_message(message, tool)
    return hmac.new(salt, normalized.encode("utf-8"), sha256).hexdigest()[:16]


def json_type(value: Any) -> str:
    """The JSON Schema type name of a parsed JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    return "object"


def arg_shape(arguments: Any) -> dict[str, str]:
    """Top-level argument keys → JSON types, sorted; values never appear, nested objects stay `object`.

    Keys are cut to 64 characters and the shape to 64 keys: keys come from the
    tool's schema, but a client could put anything there.
    """
    if not isinstance(arguments, Mapping):
        return {}
    keys = sorted(str(key)[:MAX_KEY_CHARS] for key in arguments)[:MAX_KEYS]
    by_key = {str(key)[:MAX_KEY_CHARS]: value for key, value in arguments.items()}
    return {key: json_type(by_key[key]) for key in keys}


# --- journals --------------------------------------------------------------------------------------


def journal_name(kind: str = "calls") -> str:
    """A new journal's file name: UTC open time first (name order = creation order), then pid and noise."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    return f"{stamp}-{kind}-{os.getpid()}-{secrets.token_hex(3)}.jsonl"


def event_id_for(session: str, source: str, position: int) -> str:
    """A deterministic event id: converting the same journal twice gives the same ids (and no duplicates).

    `source` names what the records were read from; for Phase 1, the capture
    journal's name and life (`phase1.journal_life`), so a new journal of the
    same attempt gives new ids.
    """
    return str(uuid.uuid5(_EVENT_NAMESPACE, f"{session}\0{source}\0{position}"))


_append_lock = threading.Lock()


def append_records(
    home: Home, records: Iterable[CallRecord], *, announce: Callable[[str], None] | None = None
) -> Path | None:
    """Store records as a new journal of the home, whole or not at all; returns it (None if no records).

    Each call writes its own file (named by time, so it sorts after every
    journal indexed so far, and the next `index` reads it incrementally). The
    file appears by rename, complete, under the shared journal lock.
    `announce` is told the file's name before it is written (and never when
    there are no records), so a caller can note where the records are going
    and later tell a hand-over that happened from one a kill cut short
    (`artifacts/handover.py`); calls are serialized within the process.
    """
    data = b"".join(record.to_line() for record in records)
    if not data:
        return None
    home.journals.mkdir(parents=True, exist_ok=True)
    with _append_lock:
        path = home.journals / journal_name("phase1")
        if announce is not None:
            announce(path.name)
        with JournalLock(home) as lock, lock.shared():
            atomic_write_bytes(path, data)
    return path
