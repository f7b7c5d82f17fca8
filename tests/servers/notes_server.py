"""A small MCP server with tools that change state, for the functional and quality layers' tests.

Notes are files in $NOTES_DIR (`<id>.md`), so a test proves what a case left
behind by looking at the folder. Tools:

- `create_note`, `delete_note`: annotated destructive; a case must opt them in.
- `list_notes`, `get_note`: read-only.
- `crash`: the process exits at once (code 3); `hang`: sleeps for `seconds`.
- `reject`: answers with a JSON-RPC error of the given `code` instead of a result.
- `render`: text in a given style (`markdown`, `list`, `prose`), for the structural checks.
- `items`: a list of objects whose keys agree, or not (`consistent`).
- `sized`: a text response of exactly `chars` characters, for the response budgets.

With $NOTES_START_ONCE set, a second start in the same $NOTES_DIR fails (a server that
cannot be restarted).
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import ToolAnnotations
from pydantic import BaseModel

READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)
DESTRUCTIVE = ToolAnnotations(
    readOnlyHint=False, destructiveHint=True, idempotentHint=False, openWorldHint=False
)

app = MCPServer("notes", log_level="WARNING")

if os.environ.get("NOTES_START_ONCE"):
    # For tests of a server that cannot be restarted: the second start fails.
    _marker = Path(os.environ["NOTES_DIR"]) / ".started"
    if _marker.exists():
        print("notes: refusing a second start", file=sys.stderr)
        sys.exit(1)
    _marker.parent.mkdir(parents=True, exist_ok=True)
    _marker.touch()


def notes_dir() -> Path:
    folder = Path(os.environ["NOTES_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Note(BaseModel):
    id: str
    title: str
    text: str


class NoteList(BaseModel):
    notes: list[str]


class Deleted(BaseModel):
    deleted: str


class Items(BaseModel):
    items: list[dict[str, Any]]


@app.tool(description="Create a note; returns its id.", annotations=DESTRUCTIVE)
def create_note(title: str, text: str = "") -> Note:
    note_id = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "note"
    (notes_dir() / f"{note_id}.md").write_text(text, encoding="utf-8")
    return Note(id=note_id, title=title, text=text)


@app.tool(description="Delete a note by id.", annotations=DESTRUCTIVE)
def delete_note(note_id: str) -> Deleted:
    path = notes_dir() / f"{note_id}.md"
    if not path.exists():
        raise ToolError(f"no note {note_id!r}")
    path.unlink()
    return Deleted(deleted=note_id)


@app.tool(description="List note ids.", annotations=READ_ONLY)
def list_notes() -> NoteList:
    return NoteList(notes=sorted(path.stem for path in notes_dir().glob("*.md")))


@app.tool(description="Read a note.", annotations=READ_ONLY)
def get_note(note_id: str) -> Note:
    path = notes_dir() / f"{note_id}.md"
    if not path.exists():
        raise ToolError(f"no note {note_id!r}")
    return Note(id=note_id, title=note_id, text=path.read_text(encoding="utf-8"))


@app.tool(description="Exit the server process at once.", annotations=READ_ONLY)
def crash() -> str:
    os._exit(3)


@app.tool(description="Sleep, then answer.", annotations=READ_ONLY)
def hang(seconds: float = 30.0) -> str:
    time.sleep(seconds)
    return "awake"


@app.tool(description="Answer with a JSON-RPC error.", annotations=READ_ONLY)
def reject(code: int = -32602) -> str:
    raise MCPError(code=code, message=f"rejected with {code}")


@app.tool(description="Text in a style.", annotations=READ_ONLY)
def render(style: Literal["markdown", "list", "prose"] = "markdown") -> str:
    if style == "markdown":
        return "# Notes\n\n- first\n- second\n"
    if style == "list":
        return "- first\n- second\n  continued\n3. third\n"
    return "Just a sentence.\nAnd another one."


@app.tool(description="A list of objects.", annotations=READ_ONLY)
def items(consistent: bool = True) -> Items:
    rows: list[dict[str, Any]] = [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    if not consistent:
        rows.append({"id": 3, "title": "c"})
    return Items(items=rows)


@app.tool(description="A text response of exactly `chars` characters.", annotations=READ_ONLY)
def sized(chars: int = 10) -> str:
    return "x" * chars


if __name__ == "__main__":
    app.run()
