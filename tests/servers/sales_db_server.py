"""A SQLite-backed MCP server whose tools say what they accept only in words, for argument synthesis.

Shaped like the database servers people publish: a listing tool that returns
`str(rows)` (Python's notation, not JSON) and a query tool that refuses
anything but a SELECT. None of the values a tool accepts is in its schema:

- `list_tables()` → `[{'name': 'customers'}, {'name': 'invoices'}]`.
- `read_query(query)`: described only as "Run a read query."; answers "Only SELECT queries are
  allowed" to anything else, and "no such table: X" (SQLite's own words) to an unknown table.
- `sales_since(since)`: its parameter's description gives the format, `DD/MM/YYYY`; nothing else parses.
- `invoices_on(when, limit)`: only the tool's description, a docstring's `Args:` section, gives an
  example of `when` (an ISO date).
- `sales_report(period)`: only its error tells the values: "period must be one of: daily, weekly, monthly".
- `colour_swatch(colour)`: refuses every value, quoting it, and lists colours it never accepts either
  (synthesis must stop at `check.synthesis_max_calls`).
- `drop_table(name)`: changes state and is not annotated read-only; a check must never call it.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)
PERIODS = ("daily", "weekly", "monthly")
COLOURS = ("red", "green", "blue", "cyan", "magenta", "yellow", "black", "white")

db = sqlite3.connect(":memory:", check_same_thread=False)
db.executescript(
    """
    CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);
    CREATE TABLE invoices (number TEXT PRIMARY KEY, customer_id INTEGER, day TEXT, total REAL);
    INSERT INTO customers VALUES (1, 'Ada'), (2, 'Grace');
    INSERT INTO invoices VALUES ('INV-0001', 1, '2024-03-15', 120.5), ('INV-0002', 2, '2024-03-16', 80);
    """
)

app = MCPServer("sales-db", log_level="WARNING")


@app.tool(description="List the tables.", annotations=READ_ONLY)
def list_tables() -> str:
    rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall()
    return str([{"name": name} for (name,) in rows])


@app.tool(description="Run a read query.", annotations=READ_ONLY)
def read_query(query: str) -> str:
    if not query.strip().upper().startswith("SELECT"):
        raise ToolError("Only SELECT queries are allowed for read_query")
    try:
        return str(db.execute(query).fetchall())
    except sqlite3.Error as exc:
        raise ToolError(f"Database error: {exc}") from None


@app.tool(description="Total sales since a day.", annotations=READ_ONLY)
def sales_since(since: Annotated[str, Field(description="First day to include, as DD/MM/YYYY.")]) -> str:
    try:
        day = dt.datetime.strptime(since, "%d/%m/%Y").date()
    except ValueError:
        raise ToolError(f"cannot read {since!r} as a day") from None
    query = "SELECT COALESCE(SUM(total), 0) FROM invoices WHERE day >= ?"
    (total,) = db.execute(query, (day.isoformat(),)).fetchone()
    return f"{total} since {day.isoformat()}"


@app.tool(
    description=(
        "Invoices issued on one day.\n\n"
        "Args:\n    when: the day, e.g. 2024-03-15\n    limit: most rows to return\n"
    ),
    annotations=READ_ONLY,
)
def invoices_on(when: str, limit: int = 10) -> str:
    try:
        day = dt.date.fromisoformat(when)
    except ValueError:
        raise ToolError(f"cannot read {when!r} as a day") from None
    query = "SELECT number FROM invoices WHERE day = ? LIMIT ?"
    rows = db.execute(query, (day.isoformat(), limit)).fetchall()
    return str(rows)


@app.tool(description="A sales report.", annotations=READ_ONLY)
def sales_report(period: str) -> str:
    if period not in PERIODS:
        raise ToolError("period must be one of: daily, weekly, monthly")
    return f"{period} sales: 200.5"


@app.tool(description="A colour swatch for the invoice template.", annotations=READ_ONLY)
def colour_swatch(colour: str) -> str:
    if colour in COLOURS:
        raise ToolError(f"no swatch in stock for {colour!r}")
    raise ToolError(f"unknown colour {colour!r}; expected one of {', '.join(COLOURS)}")


@app.tool(description="Drop a table.")
def drop_table(name: str) -> str:
    db.execute(f'DROP TABLE "{name}"')
    return f"dropped {name}"


if __name__ == "__main__":
    app.run()
