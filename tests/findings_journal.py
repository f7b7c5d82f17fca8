"""Writing findings journals for tests: real call records in real journal files under a home.

Records go through `CallRecord` and its own `to_line`, and template ids through
the home's salt, exactly as the capture proxy writes them; only the calls
themselves are scripted.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from mcpipechekr.findings.evidence.records import CallRecord, template_id
from mcpipechekr.findings.home import Home

T0 = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
_NAMESPACE = uuid.UUID("0e4a1c52-7d8b-4f3e-a6c9-5b2d8e1f7a34")


def event_id(session: str, seq: int) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"{session}:{seq}"))


@dataclass
class Session:
    """Calls of one client session, appended in order."""

    home: Home
    name: str
    server: str = "notes"
    start: datetime = T0
    records: list[CallRecord] = field(default_factory=list)

    def ok(self, tool: str, **shape: str) -> str:
        return self._add(tool, "ok", shape)

    def error(
        self, tool: str, message: str, *, code: str | None = None, retryable: bool | None = None, **shape: str
    ) -> str:
        return self._add(tool, "error", shape, message=message, code=code, retryable=retryable)

    def probe_error(self, tool: str, message: str) -> str:
        return self._add(tool, "error", {}, message=message, probe=True)

    def _add(
        self,
        tool: str,
        outcome: str,
        shape: dict[str, str],
        *,
        message: str | None = None,
        code: str | None = None,
        retryable: bool | None = None,
        probe: bool = False,
    ) -> str:
        seq = len(self.records)
        record = CallRecord(
            event_id=event_id(self.name, seq),
            session=self.name,
            seq=seq,
            at=self.start + timedelta(seconds=10 * seq),
            server=self.server,
            tool=tool,
            template_id=template_id(self.home.salt(), message, tool) if message is not None else None,
            arg_shape=shape,  # type: ignore[arg-type]
            outcome=outcome,  # type: ignore[arg-type]
            err_code=code,
            retryable=retryable,
            latency_ms=3.0,
            request_bytes=100,
            response_bytes=200,
            probe=probe,
        )
        self.records.append(record)
        return record.event_id


def write_journal(home: Home, name: str, *sessions: Session) -> Path:
    """One journal file holding the sessions' records; `name` orders it among the others."""
    home.journals.mkdir(parents=True, exist_ok=True)
    path = home.journals / f"{name}.jsonl"
    path.write_bytes(b"".join(record.to_line() for session in sessions for record in session.records))
    return path
