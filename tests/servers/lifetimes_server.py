"""An MCP server that records its lifetime, so a test can tell which copies of it ran at the same time.

Each process appends `start PID` to $LIFETIME_DIR/events as it starts and
`stop PID` once its stdin closes (a polite stop). One short line appended with
O_APPEND lands whole, so the file's order is the order of the events, whatever
the clock says.

$LIFETIME_PEERS=N: a starting process waits until N starts are recorded (at
most $LIFETIME_WAIT_S seconds, default 20) before it speaks MCP. Two copies
started one after the other then record `start, stop, start, stop`; two started
together record both starts first. A test reads that order, never a duration.

$LIFETIME_CRASH_ON_CALL=1: the first tools/call ends the process at once.

Tools (read-only): `list_notes`, the notes with their ids; `get_note(note_id)`.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

EVENTS = Path(os.environ["LIFETIME_DIR"]) / "events"
NOTES = [
    {"note_id": "n-101", "title": "Harbour survey", "author": "Ines Okafor"},
    {"note_id": "n-102", "title": "Moss inventory", "author": "Tomas Lind"},
    {"note_id": "n-103", "title": "Tide tables", "author": "Ines Okafor"},
]
READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)


def record(event: str) -> None:
    fd = os.open(EVENTS, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, f"{event} {os.getpid()}\n".encode())
    finally:
        os.close(fd)


def starts() -> int:
    return sum(1 for line in EVENTS.read_text().splitlines() if line.startswith("start "))


app = MCPServer("lifetimes", log_level="WARNING")


def crash_if_asked() -> None:
    if os.environ.get("LIFETIME_CRASH_ON_CALL") == "1":
        print("lifetimes_server: crashing on a call, as asked", file=sys.stderr, flush=True)
        os._exit(3)


@app.tool(description="List the notes, each with its id, title and author.", annotations=READ_ONLY)
def list_notes() -> list[dict[str, str]]:
    crash_if_asked()
    return NOTES


@app.tool(description="Get one note by its id.", annotations=READ_ONLY)
def get_note(note_id: str) -> dict[str, str]:
    crash_if_asked()
    for note in NOTES:
        if note["note_id"] == note_id:
            return note
    raise ValueError(f"no note {note_id}")


if __name__ == "__main__":
    record("start")
    peers = int(os.environ.get("LIFETIME_PEERS", "1"))
    deadline = time.monotonic() + float(os.environ.get("LIFETIME_WAIT_S", "20"))
    while starts() < peers and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        app.run()
    finally:
        record("stop")
