"""A small bookshop MCP server over SQLite, written as a user's own server would be: not the bundled example.

Its tools, names and data share nothing with emailindex, so a test that runs the
whole cycle on it proves the cycle does not lean on the example. The catalogue
and the orders live in a SQLite file (`$BOOKSHOP_DB`, default `bookshop.db`
beside the server), created with fixed rows on first start.

- `search_books(text, limit, page)`: books whose title or author contains the
  text, `limit` per page (at most 3), no total: finding the cheapest takes a
  caller page after page, since nothing sorts by price;
- `get_book(isbn)`: one book, with its stock;
- `order_count(customer)`: how many orders a customer placed.

Run it with `python bookshop_server.py` (stdio).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel

BOOKS = [
    ("978-0-00-000001-1", "The Quiet Harbour", "Mara Ellison", 18.5, 4),
    ("978-0-00-000002-8", "Harbour Lights", "Tomas Reyes", 12.0, 0),
    ("978-0-00-000003-5", "A Field Guide to Mosses", "Ines Okafor", 31.25, 2),
    ("978-0-00-000004-2", "Mosses of the North", "Ines Okafor", 24.0, 7),
    ("978-0-00-000005-9", "Cooking with Seaweed", "Mara Ellison", 9.99, 12),
    ("978-0-00-000006-6", "The Harbour Master", "Gil Andersen", 15.75, 1),
    ("978-0-00-000007-3", "Night Trains", "Tomas Reyes", 21.0, 3),
    ("978-0-00-000008-0", "Harbour Birds", "Ines Okafor", 7.5, 5),
]
ORDERS = [("alice", "978-0-00-000001-1"), ("alice", "978-0-00-000004-2"), ("bo", "978-0-00-000007-3")]
PAGE_MAX = 3

app = MCPServer("bookshop", log_level="WARNING")
# Every tool only reads, and says so: `check` probes and `baseline` replays only such tools.
READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)


def database() -> sqlite3.Connection:
    """The shop's database, built whole in a private file and renamed into place.

    Several server processes may start at once on a fresh path (Phase 1 traces
    tasks concurrently): each builds its own copy and the rename is atomic, so
    none ever opens a file another is still filling.
    """
    path = Path(os.environ.get("BOOKSHOP_DB") or Path(__file__).with_name("bookshop.db"))
    if not path.exists():
        building = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with sqlite3.connect(building) as connection:
            connection.executescript(
                "CREATE TABLE books (isbn TEXT PRIMARY KEY, title TEXT, author TEXT, price REAL, stock INT);"
                "CREATE TABLE orders (customer TEXT, isbn TEXT);"
            )
            connection.executemany("INSERT INTO books VALUES (?, ?, ?, ?, ?)", BOOKS)
            connection.executemany("INSERT INTO orders VALUES (?, ?)", ORDERS)
        connection.close()
        os.replace(building, path)
    return sqlite3.connect(path)


class Book(BaseModel):
    isbn: str
    title: str
    author: str
    price: float


class BookDetail(Book):
    stock: int


class Page(BaseModel):
    books: list[Book]
    page: int
    more: bool


class OrderCount(BaseModel):
    customer: str
    orders: int


@app.tool(
    annotations=READ_ONLY,
    description="Search the catalogue: books whose title or author contains `text`. "
    "Returns one page of at most 3 books (`page` starts at 1) and whether more pages follow.",
)
def search_books(text: str, limit: int = 3, page: int = 1) -> Page:
    if page < 1:
        raise ToolError("page starts at 1")
    size = max(1, min(limit, PAGE_MAX))
    pattern = f"%{text}%"
    with database() as connection:
        rows = connection.execute(
            "SELECT isbn, title, author, price FROM books WHERE title LIKE ? OR author LIKE ? "
            "ORDER BY isbn LIMIT ? OFFSET ?",
            (pattern, pattern, size + 1, (page - 1) * size),
        ).fetchall()
    books = [Book(isbn=r[0], title=r[1], author=r[2], price=r[3]) for r in rows[:size]]
    return Page(books=books, page=page, more=len(rows) > size)


@app.tool(description="One book by ISBN, with how many copies are in stock.", annotations=READ_ONLY)
def get_book(isbn: str) -> BookDetail:
    with database() as connection:
        row = connection.execute(
            "SELECT isbn, title, author, price, stock FROM books WHERE isbn = ?", (isbn,)
        ).fetchone()
    if row is None:
        raise ToolError(f"no book with ISBN {isbn}")
    return BookDetail(isbn=row[0], title=row[1], author=row[2], price=row[3], stock=row[4])


@app.tool(description="How many orders a customer has placed.", annotations=READ_ONLY)
def order_count(customer: str) -> OrderCount:
    with database() as connection:
        query = "SELECT COUNT(*) FROM orders WHERE customer = ?"
        (count,) = connection.execute(query, (customer,)).fetchone()
    return OrderCount(customer=customer, orders=count)


if __name__ == "__main__":
    app.run()
