"""An MCP server whose tools change state, to prove `check` never calls them unless opted in.

Each state-changing tool creates a file named after itself in $MARKER_DIR when it
runs, so a test sees whether it was called by looking at the folder, not at our
own report. Tools:

- `delete_everything`: annotated destructiveHint: true.
- `write_note`: annotated readOnlyHint: false, destructiveHint: false.
- `purge_cache`: no annotations, and a name that sounds like a write.
- `lookup`: no annotations, a harmless name: not called either (PC-05 warns about the annotations).
- `list_things`: annotated read-only: the one tool probes call.
"""

from __future__ import annotations

import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

app = MCPServer("destructive", log_level="WARNING")


def _mark(tool: str) -> str:
    Path(os.environ["MARKER_DIR"], tool).touch()
    return f"{tool} ran"


@app.tool(
    description="Delete every record.",
    annotations=ToolAnnotations(
        readOnlyHint=False, destructiveHint=True, idempotentHint=True, openWorldHint=False
    ),
)
def delete_everything() -> str:
    return _mark("delete_everything")


@app.tool(
    description="Write a note.",
    annotations=ToolAnnotations(
        readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False
    ),
)
def write_note(text: str) -> str:
    return _mark("write_note")


@app.tool(description="Purge the cache.")
def purge_cache() -> str:
    return _mark("purge_cache")


@app.tool(description="Look a key up.")
def lookup(key: str) -> str:
    return f"no value for {key}"


@app.tool(
    description="List the things.",
    annotations=ToolAnnotations(
        readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
    ),
)
def list_things() -> list[str]:
    return ["a", "b"]


if __name__ == "__main__":
    app.run()
