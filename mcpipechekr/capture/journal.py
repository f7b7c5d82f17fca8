"""Writing a capture journal: one record per line, each line one write(2), in the order written.

The format is `mcpipechekr.artifacts.journal.JournalRecord`; records are built
here as plain dicts (validated on reading, not on the hot path) so that the
proxy adds as little as possible to each message's round trip.

Durability: a record is handed to the kernel with a single `os.write` on a file
opened with O_APPEND before the next message is forwarded, so it survives the
proxy or the harness being killed; it is not fsynced per record (that would
cost milliseconds per message on ordinary disks), so a power loss may lose the
last records. Readers ignore a last line without its newline.

Thread-safe: the stdio proxy writes from two pump threads, and `seq` must be
unique and in file order.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from mcpipechekr._util.redact import Redactor
from mcpipechekr._util.stops import with_filename

_NO_REDACTION = Redactor([])


def parse_message(data: bytes) -> tuple[Any, str | None]:
    """(parsed JSON, None) for a JSON line, or (None, the text) for anything else."""
    stripped = data.strip()
    try:
        return orjson.loads(stripped), None
    except orjson.JSONDecodeError:
        return None, stripped.decode("utf-8", errors="replace")


class JournalWriter:
    """Appends records to one journal file; `close()` when the attempt's proxying is over."""

    def __init__(self, path: str | Path, redactor: Redactor | None = None):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.redactor = redactor or _NO_REDACTION
        self._lock = threading.Lock()
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._seq = _count_lines(self.path)

    def message(self, direction: str, data: bytes, t: float, parsed: Any = None) -> None:
        """Record one JSON-RPC message (or a non-JSON line) exactly as it crossed the wire.

        `parsed` saves parsing twice when the caller already has the JSON value.
        """
        record: dict[str, Any] = {"kind": "message", "direction": direction, "size": len(data)}
        if parsed is None:
            parsed, raw = parse_message(data)
        else:
            raw = None
        if raw is None:
            record["message"] = self.redactor.redact(parsed)
        else:
            record["raw"] = self.redactor.redact(raw)
        self._write(record, t)

    def event(self, event: str, t: float | None = None, **fields: Any) -> None:
        """Record that the proxy or the server changed state (see JournalRecord's `event`)."""
        record: dict[str, Any] = {"kind": "event", "event": event, "at": datetime.now(UTC).isoformat()}
        for key, value in fields.items():
            if value is not None:
                record[key] = self.redactor.redact(value) if isinstance(value, str) else value
        self._write(record, time_monotonic() if t is None else t)

    def _write(self, record: dict[str, Any], t: float) -> None:
        with self._lock:
            if self._fd is None:
                return  # closed: the attempt is over, late messages are not part of it
            line = orjson.dumps({"seq": self._seq, "t": t, **record}) + b"\n"
            view = memoryview(line)
            try:
                while view:
                    view = view[os.write(self._fd, view) :]
            except OSError as exc:
                raise with_filename(exc, self.path) from exc  # a write to a descriptor names no file
            self._seq += 1

    def close(self) -> None:
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __enter__(self) -> JournalWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def time_monotonic() -> float:
    """The journal clock: CLOCK_MONOTONIC, shared by every process on the machine."""
    return time.monotonic()


def _count_lines(path: Path) -> int:
    """Records already in the file, so `seq` continues when a journal is reopened."""
    try:
        with open(path, "rb") as handle:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 16), b""))
    except FileNotFoundError:
        return 0
