"""runs/{run-id}/journals/<task>__<provider>__rNNN.jsonl: every MCP message of one agent attempt.

Why a journal: the agent reaches the server under test only through the
capture proxy (`mcpipechekr.capture`), which forwards every JSON-RPC message
unchanged and records it here. Tool-call evidence in a trace therefore comes
from what actually crossed the wire, never from what an agent CLI chose to
export.

The file is JSON Lines, append-only: one record per line, each line written
whole with one system call as soon as the message has been forwarded, so a
crash loses at most the record being written, and a reader ignores a last
line without its newline (`atomic.read_jsonl`). Records are in the order they
were written (`seq`); `t` is the system's monotonic clock, comparable across
the processes of one machine (the stdio proxy is its own process), so journal
times line up with the harness's own.

Messages are recorded parsed (`message`) and redacted with the run's secrets;
a line that is not JSON is kept as text (`raw`). Events mark the proxy's and
the server's life: a `server_exited` record with `expected: false` means the
server died while the agent was still connected, which halts the run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import AwareDatetime, Field, JsonValue, NonNegativeInt, ValidationError, model_validator

from mcpipechekr.artifacts._base import ArtifactModel, FormatVersion
from mcpipechekr.artifacts.atomic import read_jsonl
from mcpipechekr.artifacts.rundir import RunDir
from mcpipechekr.artifacts.trace import safe_name
from mcpipechekr.errors import UserError

Direction = Literal["to_server", "to_agent"]
JournalEvent = Literal["proxy_started", "server_started", "server_exited", "upstream_error", "proxy_stopped"]


class JournalRecord(ArtifactModel):
    """One line of a capture journal: a JSON-RPC message as forwarded, or a proxy/server event."""

    seq: NonNegativeInt = Field(description="Position of the record in the journal, from 0.")
    t: float = Field(
        description="Monotonic clock in seconds when the proxy received the message (or saw the event); "
        "only differences between records mean anything."
    )
    kind: Literal["message", "event"] = Field(
        description="`message`: one JSON-RPC message; `event`: the proxy or the server changed state."
    )
    direction: Direction | None = Field(
        default=None, description="Messages: `to_server` (sent by the agent) or `to_agent` (by the server)."
    )
    message: JsonValue | None = Field(
        default=None, description="Messages: the JSON-RPC message as parsed, secrets redacted."
    )
    raw: str | None = Field(
        default=None, description="Messages: the line as text when it was not JSON, secrets redacted."
    )
    size: NonNegativeInt | None = Field(default=None, description="Messages: bytes on the wire.")
    event: JournalEvent | None = Field(default=None, description="Events: what happened.")
    version: FormatVersion | None = Field(
        default=None, description="`proxy_started` only: format version of this journal."
    )
    at: AwareDatetime | None = Field(default=None, description="Events: wall-clock time.")
    pid: int | None = Field(default=None, description="Events: the process the event is about.")
    exit_code: int | None = Field(
        default=None, description="`server_exited`: the exit code (negative: killed by that signal)."
    )
    expected: bool | None = Field(
        default=None,
        description="`server_exited`: true when the server stopped because the agent closed the "
        "connection, the proxy stopped it, or the agent stopped it itself (a stop with no tools/call in "
        "flight, the agent letting go right after: `detail` says so); false when it died on its own.",
    )
    detail: str | None = Field(
        default=None, description="Events: what the proxy knows about it, in one line."
    )

    @model_validator(mode="after")
    def _shape(self) -> JournalRecord:
        if self.kind == "message":
            if self.direction is None:
                raise ValueError("a `message` record needs `direction`")
            if (self.message is None) == (self.raw is None):
                raise ValueError("a `message` record has exactly one of `message` and `raw`")
        elif self.event is None:
            raise ValueError("an `event` record needs `event`")
        return self


def journal_path(run_dir: RunDir | Path, task_id: str, provider: str, repetition: int) -> Path:
    """Where the journal of one attempt lives: `journals/<task>__<provider>__r<NNN>.jsonl`.

    Named like the attempt's trace, so the two are found from each other.
    """
    if repetition < 1:
        raise ValueError("repetitions count from 1")
    root = run_dir.root if isinstance(run_dir, RunDir) else Path(run_dir)
    return root / "journals" / f"{safe_name(task_id)}__{safe_name(provider)}__r{repetition:03d}.jsonl"


def read_journal(path: str | Path) -> list[JournalRecord]:
    """Every committed record of a journal, validated; a missing file is an empty journal.

    A record that is not a JournalRecord is a UserError naming the file and the record.
    """
    records = []
    for number, record in enumerate(read_jsonl(path), start=1):
        try:
            records.append(JournalRecord.model_validate(record))
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(part) for part in first["loc"]) or "(record)"
            raise UserError(
                f"{path}: record {number} is not a journal record (field `{where}`: {first['msg']})"
            ) from None
    return records
