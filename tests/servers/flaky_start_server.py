"""An MCP server whose starts fail or succeed by a pattern: the infrastructure failures of Phase 1.

A start sleeps $FLAKY_DELAY_S (a slow server), then waits for its client's first message. Only then
does it take the next ticket in $FLAKY_DIR (files `1`, `2`, … created with O_EXCL, so no two starts
share one): tickets follow the order in which clients connected, not the order in which processes
happened to start, which a pool of servers started ahead makes a race. The ticket's letter in
$FLAKY_PATTERN decides: `F` exits with code 1 without answering (a server that dies as it starts),
anything else serves; tickets past the pattern's end serve. The ticket number goes to stderr, and
`ticket()` returns it, so a test can tell which start served which attempt.

Tools: `ticket()`, and `lookup(key)` answering `value-of-<key>`.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations


def take_ticket(folder: Path) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    number = 1
    while True:  # tickets are files named by their number
        try:
            os.close(os.open(folder / str(number), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            return number
        except FileExistsError:
            number += 1


def first_message() -> bytes:
    """Read the client's first line from stdin, and put a pipe in its place that serves that line first
    and then the rest of stdin, so the MCP server reads the whole conversation."""
    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(0, 1)
        if not chunk:
            break
        line += chunk
    read_end, write_end = os.pipe()

    def pump() -> None:
        with os.fdopen(write_end, "wb", buffering=0) as out:
            out.write(line)
            while chunk := os.read(saved, 65536):
                out.write(chunk)

    saved = os.dup(0)
    os.dup2(read_end, 0)
    os.close(read_end)
    threading.Thread(target=pump, daemon=True).start()
    return line


Path(os.environ["FLAKY_DIR"]).mkdir(parents=True, exist_ok=True)
(Path(os.environ["FLAKY_DIR"]) / f"started-{os.getpid()}").touch()  # every start, connected or not
time.sleep(float(os.environ.get("FLAKY_DELAY_S", "0")))
first_message()
TICKET = take_ticket(Path(os.environ["FLAKY_DIR"]))
PATTERN = os.environ.get("FLAKY_PATTERN", "")
print(f"flaky: ticket {TICKET}", file=sys.stderr, flush=True)
if TICKET <= len(PATTERN) and PATTERN[TICKET - 1] == "F":
    print(f"flaky: ticket {TICKET} fails to start", file=sys.stderr, flush=True)
    sys.exit(1)

READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)
app = MCPServer("flaky", log_level="WARNING")


@app.tool(description="The number of this start of the server.", annotations=READ_ONLY)
def ticket() -> int:
    return TICKET


@app.tool(description="Look up the value stored under a key.", annotations=READ_ONLY)
def lookup(key: str) -> str:
    return f"value-of-{key}"


if __name__ == "__main__":
    app.run()
