"""An MCP server whose state-changing tools declare no annotations, to prove nothing guesses from names.

Every tool but `read_notes` touches `$WRITES_MARKER_DIR/<tool name>` when it
runs, so a test sees whether it was called by looking at the folder, not at
our own report. Tools:

- `delete_everything`, `destroy_db`, `nuke`, `wipe_all_notes`, `notes_delete`,
  `rm`: no annotations at all (`destroy_db` and `rm` take a required
  argument) (the MCP defaults: readOnlyHint false,
  destructiveHint true). Some names start with a verb that sounds like a
  write, some do not (`nuke`, `rm`, `notes_delete`): none may be called.
- `archive_notes`: annotated `readOnlyHint: true, destructiveHint: true`, the
  contradiction a careless author writes; destructive wins.
- `read_notes`: annotated read-only and not destructive; the one tool that is
  called without being opted in.
"""

from __future__ import annotations

import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

app = MCPServer("unannotated-writes", log_level="WARNING")
UNANNOTATED = ("delete_everything", "destroy_db", "nuke", "wipe_all_notes", "notes_delete", "rm")


def _mark(tool: str) -> str:
    Path(os.environ["WRITES_MARKER_DIR"], tool).touch()
    return f"{tool} ran"


def _unannotated(name: str) -> None:
    def tool(target: str = "all") -> str:
        return _mark(name)

    app.tool(name=name, description=f"Run {name} on a target (default all).")(tool)


for _name in ("delete_everything", "nuke", "wipe_all_notes", "notes_delete"):
    _unannotated(_name)


# Two with a required argument, so the bad-argument probes (PC-21, PC-22) have something to try.
@app.tool(description="Drop a database by name.")
def destroy_db(name: str) -> str:
    return _mark("destroy_db")


@app.tool(description="Remove a path.")
def rm(path: str) -> str:
    return _mark("rm")


@app.tool(
    description="Archive every note.",
    annotations=ToolAnnotations(readOnlyHint=True, destructiveHint=True),
)
def archive_notes() -> str:
    return _mark("archive_notes")


@app.tool(
    description="Read the notes.",
    annotations=ToolAnnotations(
        readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
    ),
)
def read_notes() -> list[str]:
    return ["first note", "second note"]


if __name__ == "__main__":
    app.run()
