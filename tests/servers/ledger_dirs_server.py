"""An MCP server shaped like the published ones synthesis first missed on: a store folder, snapshots, scopes.

It is started with `--store DIR` (a folder of folders: its files sit only in
subfolders) and, like a git or filesystem server, answers only what that
store and its own results say. Every tool is read-only; each refuses a guessed
value with a clear error (a `ToolError`):

- `store_status(root_path)`: only the store folder; its answer names a changed file under a
  path-like key (`changed file: notes.txt`) and a diff header (`--- /dev/null`), neither a folder.
- `snapshots(root_path)`: the store's snapshots as `Revision: <40 hex digits>` lines.
- `compare(root_path, against)`: only the store folder and a revision `snapshots` gave;
  nothing in `against`'s name says it wants one.
- `entries(scope)`: only the values its description quotes ('open', 'closed', 'every'),
  which the schema does not declare as an enum.
- `read_note(path)`: only a file inside the store (all of them are in subfolders).
- `headline(url)`: annotated openWorldHint: true; answers as a published fetch server does
  offline: "Failed to fetch … due to a connection issue".
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

parser = argparse.ArgumentParser()
parser.add_argument("--store", required=True, help="the only folder the tools read")
opts = parser.parse_args()
STORE = Path(opts.store).resolve()
SNAPSHOTS = ["3f9a0c1d2e4b5a6978812345abcdef0123456789", "77aa55cc33ee11ff0099887766554433221100ab"]

READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)
OPEN_WORLD = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=True
)

app = MCPServer("ledger-dirs", log_level="WARNING")


def _store(root_path: str) -> Path:
    if Path(root_path).resolve() != STORE:
        raise ToolError(f"{root_path!r} is not the store this server was started with")
    return STORE


@app.tool(description="What changed in the store since the last snapshot.", annotations=READ_ONLY)
def store_status(root_path: str) -> str:
    _store(root_path)
    return "changed file: notes.txt\n--- /dev/null\n+++ b/notes.txt\n"


@app.tool(description="The store's snapshots, newest first.", annotations=READ_ONLY)
def snapshots(root_path: str) -> str:
    _store(root_path)
    return "\n".join(f"Revision: {sha}\nTaken: 2024-03-0{n + 1}" for n, sha in enumerate(SNAPSHOTS))


@app.tool(description="What differs between the store and a snapshot.", annotations=READ_ONLY)
def compare(root_path: str, against: str) -> str:
    _store(root_path)
    if against not in SNAPSHOTS:
        raise ToolError(f"no snapshot {against!r}")
    return f"1 file differs from {against[:7]}"


@app.tool(description="List the ledger's entries.", annotations=READ_ONLY)
def entries(
    scope: Annotated[
        str,
        Field(
            description="Which entries: the open ones ('open'), the closed ones ('closed') or all ('every')."
        ),
    ],
) -> str:
    if scope not in ("open", "closed", "every"):
        raise ToolError(f"unknown scope {scope!r}")
    return f"0 {scope} entries"


@app.tool(description="Read one note file of the store.", annotations=READ_ONLY)
def read_note(path: str) -> str:
    target = Path(path).resolve()
    if STORE not in target.parents or not target.is_file():
        raise ToolError(f"{path!r} is no file in the store")
    return target.read_text(encoding="utf-8")


@app.tool(description="The headline of a web page.", annotations=OPEN_WORLD)
def headline(url: str) -> str:
    raise ToolError(f"Failed to fetch robots.txt {url.rstrip('/')}/robots.txt due to a connection issue")


if __name__ == "__main__":
    app.run()
