"""A small library catalogue over MCP (stdio), for the session-import tests.

Its tool names are unlike the example server's, and one is a suffix of another
(`books`, `search_books`), so mapping a client's prefixed names back has to pick
the longest listed name. Tools (read-only, in-memory data):

- `search_books(query, limit=10)`: books whose title or author contains `query`,
  as `{"books": [{"id", "title", "year"}]}` in catalogue order;
- `books(author)`: the titles of one author, as `{"titles": [...]}`;
- `get_book(book_id, fields=None)`: one book's record; asked for `fields`, it
  fails with a planted `catalogue error: no such column: loans.due_date` (the
  projection joins a table that is not there), so an agent has to drop the
  argument: a bug for Phase 2 to find.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel

READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)

CATALOGUE = [
    {"id": 1, "title": "Dune", "author": "Frank Herbert", "year": 1965, "pages": 412},
    {"id": 2, "title": "Dune Messiah", "author": "Frank Herbert", "year": 1969, "pages": 256},
    {"id": 3, "title": "Children of Dune", "author": "Frank Herbert", "year": 1976, "pages": 444},
    {"id": 4, "title": "A Wizard of Earthsea", "author": "Ursula K. Le Guin", "year": 1968, "pages": 183},
    {
        "id": 5,
        "title": "The Left Hand of Darkness",
        "author": "Ursula K. Le Guin",
        "year": 1969,
        "pages": 286,
    },
]

app = MCPServer("shelf", log_level="WARNING")


class BookHit(BaseModel):
    id: int
    title: str
    year: int


class SearchResult(BaseModel):
    books: list[BookHit]


class Titles(BaseModel):
    titles: list[str]


class Book(BaseModel):
    id: int
    title: str
    author: str
    year: int
    pages: int


@app.tool(
    description="Search the catalogue: books whose title or author contains the query (case-insensitive).",
    annotations=READ_ONLY,
)
def search_books(query: str, limit: int = 10) -> SearchResult:
    needle = query.lower()
    hits = [book for book in CATALOGUE if needle in book["title"].lower() or needle in book["author"].lower()]
    return SearchResult(books=[BookHit(id=b["id"], title=b["title"], year=b["year"]) for b in hits[:limit]])


@app.tool(description="The titles of every book by one author (exact name).", annotations=READ_ONLY)
def books(author: str) -> Titles:
    return Titles(titles=[book["title"] for book in CATALOGUE if book["author"] == author])


@app.tool(
    description="One book's full record by id; `fields` limits the answer to those fields.",
    annotations=READ_ONLY,
)
def get_book(book_id: int, fields: list[str] | None = None) -> Book:
    if fields:
        raise ToolError("catalogue error: no such column: loans.due_date")
    for book in CATALOGUE:
        if book["id"] == book_id:
            return Book(**book)
    raise ToolError(f"no book with id {book_id}")


if __name__ == "__main__":
    app.run()
