"""`slow-notes-mcp`: a knowledge base over markdown notes under $HOME, as published servers are.

What makes it a test of a newcomer's first hour: it is installed from a
package (no source checkout), its data lives under the user's home
(`$HOME/.slow-notes/*.md`, seeded with a few notes on first start), and it
takes `$SLOW_NOTES_START_S` seconds (default 20) to start before it answers
anything, as a server that loads an index does. Each start appends a line to
`$HOME/.slow-notes/starts.log`, so a benchmark can count them.

Every tool only reads, and says so. A note is markdown with a small header:

    # Title
    author: …
    status: open | done
    updated: YYYY-MM-DD
    tags: a, b

    body…
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel

SEED = {
    "harbour-survey": (
        "Harbour survey",
        "Ines Okafor",
        "open",
        "2026-03-02",
        "field, water",
        "Depth readings.",
    ),
    "moss-inventory": ("Moss inventory", "Mara Ellison", "done", "2026-01-15", "field", "Forty-one species."),
    "budget-2026": ("Budget 2026", "Tomas Reyes", "open", "2026-02-20", "money", "Travel is capped."),
    "kitchen-rota": ("Kitchen rota", "Gil Andersen", "done", "2025-12-01", "office", "Weekly, by team."),
    "seaweed-recipes": ("Seaweed recipes", "Mara Ellison", "open", "2026-04-11", "food", "Dulse crisps."),
}
READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)

app = MCPServer("slow-notes", log_level="WARNING")


class NoteInfo(BaseModel):
    slug: str
    title: str
    author: str
    status: str
    updated: str
    tags: list[str]


class Note(NoteInfo):
    body: str


class NoteList(BaseModel):
    notes: list[NoteInfo]


def folder() -> Path:
    return Path(os.environ["HOME"]) / ".slow-notes"


def seed() -> None:
    notes = folder()
    notes.mkdir(parents=True, exist_ok=True)
    for slug, (title, author, status, updated, tags, body) in SEED.items():
        path = notes / f"{slug}.md"
        if not path.exists():
            header = f"# {title}\nauthor: {author}\nstatus: {status}\nupdated: {updated}\ntags: {tags}\n"
            path.write_text(f"{header}\n{body}\n", encoding="utf-8")


def read(path: Path) -> Note:
    lines = path.read_text(encoding="utf-8").splitlines()
    fields = dict(line.split(": ", 1) for line in lines[1:5] if ": " in line)
    tags_line = next((line for line in lines if line.startswith("tags: ")), "tags: ")
    return Note(
        slug=path.stem,
        title=lines[0].removeprefix("# ").strip(),
        author=fields.get("author", ""),
        status=fields.get("status", ""),
        updated=fields.get("updated", ""),
        tags=[tag.strip() for tag in tags_line.removeprefix("tags: ").split(",") if tag.strip()],
        body="\n".join(lines[6:]).strip(),
    )


@app.tool(
    description="List every note: its slug, title, author, status, date of last update and tags.",
    annotations=READ_ONLY,
)
def list_notes() -> NoteList:
    return NoteList(
        notes=[NoteInfo(**read(path).model_dump(exclude={"body"})) for path in sorted(folder().glob("*.md"))]
    )


@app.tool(
    description="Read one note by its slug (from list_notes): its fields and its text.", annotations=READ_ONLY
)
def read_note(slug: str) -> Note:
    path = folder() / f"{slug}.md"
    if not path.is_file():
        raise ToolError(f"no note with the slug {slug!r}; list_notes gives the slugs")
    return read(path)


@app.tool(description="Notes whose title, text or tags contain the words of `query`.", annotations=READ_ONLY)
def search_notes(query: str) -> NoteList:
    words = query.lower().split()
    found = []
    for path in sorted(folder().glob("*.md")):
        text = path.read_text(encoding="utf-8").lower()
        if all(word in text for word in words):
            found.append(NoteInfo(**read(path).model_dump(exclude={"body"})))
    return NoteList(notes=found)


def main() -> None:
    time.sleep(float(os.environ.get("SLOW_NOTES_START_S", "20")))
    seed()
    with open(folder() / "starts.log", "a", encoding="utf-8") as log:
        log.write(f"{os.getpid()}\n")
    app.run()


if __name__ == "__main__":
    main()
