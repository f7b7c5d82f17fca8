"""An MCP server whose defects are switched by environment variables, for verification tests.

Tools:
- `lookup(key)`: answers `{"key": key, "found": true}`; with FINDINGS_BROKEN=1 it raises
  (an unhandled exception, reported as a tool error); with FINDINGS_FAIL_EVERY=N every
  Nth call in the process raises (a flaky failure).
- `save(note)`: answers `{"saved": true}`; with FINDINGS_BROKEN=1 it answers
  `{"saved": false}` without an error (what a false success looks like to a check).
- `touch(text)`: appends to the file given by --scratch, a regular file passed as an
  argument, so the server's files change during a call.

Every tool is annotated read-only so a verification may call it.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

parser = argparse.ArgumentParser()
parser.add_argument("--scratch", type=Path)
opts = parser.parse_args()

READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False)
app = MCPServer("findings")
calls = {"lookup": 0}


def broken() -> bool:
    return os.environ.get("FINDINGS_BROKEN") == "1"


@app.tool(description="Look a key up.", annotations=READ_ONLY)
def lookup(key: str) -> dict:
    calls["lookup"] += 1
    every = int(os.environ.get("FINDINGS_FAIL_EVERY", "0"))
    if broken() or (every and calls["lookup"] % every == 0):
        raise RuntimeError(f"lookup failed for {key}")
    return {"key": key, "found": True}


@app.tool(description="Save a note.", annotations=READ_ONLY)
def save(note: str) -> dict:
    return {"saved": not broken()}


@app.tool(description="Append to the scratch file.", annotations=READ_ONLY)
def touch(text: str) -> str:
    if opts.scratch is not None:
        with open(opts.scratch, "a", encoding="utf-8") as handle:
            handle.write(text + "\n")
    return "touched"


if __name__ == "__main__":
    app.run()
