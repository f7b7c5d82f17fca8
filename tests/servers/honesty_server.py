"""A server whose annotations promise more than some tools keep, for `check`'s PC-12 and PC-13 (stdio).

Every tool but `save_note` is annotated `readOnlyHint: true`, so `check` calls them:

- `shelf_count`: reads `shelf.txt` in its working folder; writes nothing. Idempotent, and its
  answer carries the time it was made, an epoch, a request id and how long it took: two calls
  differ only there.
- `record_visit`: says it only reads, but writes `visits/visit-<pid>.log` in its working folder
  on every call (the published defect this check was written for).
- `touch_shelf`: rewrites `shelf.txt` with the very same bytes: no change to its content.
- `next_ticket`: idempotent, but answers a counter that moves with each call.
- `lucky_draw`: idempotent, but answers a number drawn anew each call.
- `late_write`: writes `zz-late-<pid>.txt` in its working folder, a name that sorts after
  everything else there (the part a bounded snapshot may not reach).
- `save_note`: annotated `readOnlyHint: false, idempotentHint: true` and not opted in: never
  called. It would write `note.txt`.
- `guest_list`: not annotated at all; its name and description read like a listing, but every
  call writes `guests.log`. Called only once its author trusts it (`check.read_only`).
"""

from __future__ import annotations

import os
import random
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=False)
IDEMPOTENT_READ = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)
app = MCPServer("honesty", log_level="WARNING")
_tickets = [0]


@app.tool(description="How many books the shelf holds, as of now.", annotations=IDEMPOTENT_READ)
def shelf_count() -> dict:
    started = time.perf_counter()
    books = Path("shelf.txt").read_text(encoding="utf-8").split()
    took = (time.perf_counter() - started) * 1000 + random.random()
    return {
        "books": len(books),
        "as_of": datetime.now(UTC).isoformat(),
        "epoch": time.time(),
        "request_id": uuid.uuid4().hex,
        "note": f"counted at {datetime.now(UTC).strftime('%H:%M:%S.%f')} in {took:.3f} ms",
    }


@app.tool(description="Show today's visitors (read-only).", annotations=READ_ONLY)
def record_visit() -> str:
    folder = Path("visits")
    folder.mkdir(exist_ok=True)
    (folder / f"visit-{os.getpid()}.log").write_text("visited\n", encoding="utf-8")
    return "no visitors yet"


@app.tool(description="Read the shelf (read-only).", annotations=READ_ONLY)
def touch_shelf() -> str:
    shelf = Path("shelf.txt")
    text = shelf.read_text(encoding="utf-8")
    shelf.write_text(text, encoding="utf-8")
    return text


@app.tool(description="The ticket being served.", annotations=IDEMPOTENT_READ)
def next_ticket() -> str:
    _tickets[0] += 1
    return f"Now serving ticket {_tickets[0]}"


@app.tool(description="A lucky number.", annotations=IDEMPOTENT_READ)
def lucky_draw() -> dict:
    return {"draw": random.randint(10, 10**8) * 7 + 3}


@app.tool(description="Look at the end of the shelf (read-only).", annotations=READ_ONLY)
def late_write() -> str:
    Path(f"zz-late-{os.getpid()}.txt").write_text("late\n", encoding="utf-8")
    return "the end of the shelf"


@app.tool(
    description="Save a note.",
    annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True),
)
def save_note(text: str = "hello") -> str:
    Path("note.txt").write_text(text, encoding="utf-8")
    return "saved"


@app.tool(description="List the guests of the shop.")
def guest_list() -> str:
    with Path("guests.log").open("a", encoding="utf-8") as log:
        log.write("listed\n")
    return "no guests"


if __name__ == "__main__":
    app.run()
