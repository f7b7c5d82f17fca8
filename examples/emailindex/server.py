"""emailindex: search a personal email archive over MCP.

    python server.py                      # stdio
    python server.py --http 8765          # streamable HTTP at http://127.0.0.1:8765/mcp

The archive is a SQLite file with an FTS5 index over subjects and bodies. It lives
at $EMAILINDEX_DB, or archive.db next to this file, and is generated on first
start when missing (see archive.py). Every tool only reads it.
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, timedelta
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from archive import ensure_archive

HERE = Path(__file__).resolve().parent
COLUMNS = ("id", "thread_id", "date", "sender", "sender_name", "recipients", "subject", "body")
SUMMARY_COLUMNS = "e.id, e.thread_id, e.date, e.sender, e.sender_name, e.subject"
READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)

app = MCPServer(
    "emailindex",
    instructions="Search and read an email archive (2012 onwards). All tools are read-only.",
    log_level="WARNING",
)


def db_path() -> Path:
    return Path(os.environ.get("EMAILINDEX_DB") or HERE / "archive.db")


@contextmanager
def connect() -> Iterator[sqlite3.Connection]:
    """A fresh read-only connection per call: the archive is small and calls may run on any thread.

    mode=ro also means a missing archive is an error rather than a new, empty database.
    """
    con = sqlite3.connect(f"{db_path().resolve().as_uri()}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    try:
        yield con
    except sqlite3.Error as exc:
        raise ToolError(f"database error: {exc}") from exc
    finally:
        con.close()


# --- Argument handling ---------------------------------------------------------------------------


def _day(value: str, name: str) -> date:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        raise ToolError(f"{name} {value!r} is not a date; use YYYY-MM-DD, e.g. 2019-03-31")
    try:
        return date.fromisoformat(value)
    except ValueError as exc:
        raise ToolError(f"{name} {value!r} is not a valid date: {exc}") from exc


def _match_expression(keywords: str) -> str:
    """Quote every term so user text never reaches FTS5 as query syntax (no operator or column errors)."""
    terms = []
    for phrase, word in re.findall(r'"([^"]*)"|(\S+)', keywords):
        tokens = re.findall(r"\w+", phrase or word)
        if tokens:
            terms.append('"' + " ".join(tokens) + '"')
    if not terms:
        raise ToolError(f"keywords {keywords!r} contain no searchable words")
    return " ".join(terms)


def _filters(sender: str | None, date_from: str | None, date_to: str | None) -> tuple[list[str], list[Any]]:
    """WHERE clauses over `emails AS e` for everything except the keywords."""
    clauses: list[str] = []
    params: list[Any] = []
    if sender:
        pattern = "%" + sender.strip().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        clauses.append("(e.sender LIKE ? ESCAPE '\\' OR e.sender_name LIKE ? ESCAPE '\\')")
        params += [pattern, pattern]
    start = _day(date_from, "date_from") if date_from else None
    end = _day(date_to, "date_to") if date_to else None
    if start and end and start > end:
        raise ToolError(f"date_from {date_from} is after date_to {date_to}")
    if start:
        clauses.append("e.date >= ?")
        params.append(start.isoformat())
    if end:
        # Dates carry a time of day, so "up to and including date_to" means "before the next day".
        clauses.append("e.date < ?")
        params.append((end + timedelta(days=1)).isoformat())
    return clauses, params


def _keyword_filter(keywords: str | None) -> tuple[list[str], list[Any]]:
    if not keywords:
        return [], []
    return ["e.id IN (SELECT rowid FROM emails_fts WHERE emails_fts MATCH ?)"], [_match_expression(keywords)]


def _where(clauses: list[str]) -> str:
    return " AND ".join(clauses) if clauses else "1"


def _columns(fields: list[str] | None) -> list[str] | None:
    if fields is None:
        return None
    if not fields:
        raise ToolError(f"fields is empty; name at least one of: {', '.join(COLUMNS)}")
    unknown = [f for f in fields if f not in COLUMNS]
    if unknown:
        raise ToolError(f"unknown field(s) {', '.join(unknown)}; choose from: {', '.join(COLUMNS)}")
    return list(dict.fromkeys(fields))


# --- Ordering ------------------------------------------------------------------------------------


def _order_by(keywords: str | None) -> str:
    """Best match first when searching; otherwise id order, which is stable, so offset paging is exact."""
    if keywords:
        return "fts.rank"
    return "e.id"


# --- Queries -------------------------------------------------------------------------------------


def _count(con: sqlite3.Connection, keywords: str | None, clauses: list[str], params: list[Any]) -> int:
    keyword_clauses, keyword_params = _keyword_filter(keywords)
    sql = f"SELECT count(*) FROM emails AS e WHERE {_where(keyword_clauses + clauses)}"
    return con.execute(sql, keyword_params + params).fetchone()[0]


def _fetch_summaries(
    con: sqlite3.Connection,
    keywords: str | None,
    clauses: list[str],
    params: list[Any],
    order: str,
    limit: int,
    offset: int,
) -> list[dict[str, Any]]:
    """Rows with a snippet: the matched passage when searching, else the opening of the body."""
    if keywords:
        sql = (
            f"SELECT {SUMMARY_COLUMNS}, snippet(emails_fts, -1, '[', ']', ' … ', 24) AS snippet"
            f" FROM emails_fts(?) AS fts JOIN emails AS e ON e.id = fts.rowid"
            f" WHERE {_where(clauses)} ORDER BY {order} LIMIT ? OFFSET ?"
        )
        args = [_match_expression(keywords), *params, limit, offset]
    else:
        sql = (
            f"SELECT {SUMMARY_COLUMNS}, substr(e.body, 1, 160) AS snippet FROM emails AS e"
            f" WHERE {_where(clauses)} ORDER BY {order} LIMIT ? OFFSET ?"
        )
        args = [*params, limit, offset]
    return [dict(row) for row in con.execute(sql, args)]


def _fetch_projected(
    con: sqlite3.Connection,
    columns: list[str],
    keywords: str | None,
    clauses: list[str],
    params: list[Any],
    order: str,
    limit: int,
    offset: int,
) -> list[dict[str, Any]]:
    """Only the requested columns, for callers that want compact rows (no snippet is computed)."""
    keyword_clauses, keyword_params = _keyword_filter(keywords)
    select = ", ".join(f"e.{column}" for column in columns)
    sql = (
        f"SELECT {select} FROM emails AS e WHERE {_where(keyword_clauses + clauses)}"
        f" ORDER BY {order} LIMIT ? OFFSET ?"
    )
    return [dict(row) for row in con.execute(sql, [*keyword_params, *params, limit, offset])]


# --- Tools ---------------------------------------------------------------------------------------


class QueryResult(BaseModel):
    total: int = Field(description="How many emails match, ignoring limit and offset.")
    offset: int = Field(description="Offset of the first returned email within all matches.")
    emails: list[dict[str, Any]] = Field(description="The matching emails on this page.")


class Email(BaseModel):
    id: int
    thread_id: str = Field(description="Emails in the same conversation share a thread_id.")
    date: str = Field(description="When the email was sent, ISO 8601 (YYYY-MM-DDTHH:MM:SS).")
    sender: str = Field(description="Sender's email address.")
    sender_name: str
    recipients: str = Field(description="Comma-separated recipient addresses.")
    subject: str
    body: str


class CountResult(BaseModel):
    count: int = Field(description="Number of matching emails.")


Keywords = Annotated[
    str | None,
    Field(
        description="Full-text search over subject and body. Every word must appear, in any order; put a "
        'phrase in double quotes to match it exactly, e.g. "board meeting" budget. Case-insensitive.'
    ),
]
Sender = Annotated[
    str | None,
    Field(description="Part of the sender's address or name, case-insensitive, e.g. 'dana' or 'keystone'."),
]
DateFrom = Annotated[
    str | None, Field(description="Only emails sent on or after this day, YYYY-MM-DD (inclusive).")
]
DateTo = Annotated[
    str | None, Field(description="Only emails sent on or before this day, YYYY-MM-DD (inclusive).")
]

QUERY_DESCRIPTION = """Search the email archive and list matching emails.

Filters combine with AND: keywords (full-text over subject and body), sender, and a date range. Returns
`total` (all matches) and one page of `emails`, each with id, thread_id, date, sender, sender_name, subject
and a snippet (the matching passage when keywords are given). Use `fields` to return only some columns,
including the full `body`. Use get_email for one complete email.

Order: by relevance when keywords are given, otherwise by id. Ids are not in date order."""


@app.tool(description=QUERY_DESCRIPTION, annotations=READ_ONLY)
def query_email_database(
    keywords: Keywords = None,
    sender: Sender = None,
    date_from: DateFrom = None,
    date_to: DateTo = None,
    limit: Annotated[int, Field(ge=1, le=100, description="Most emails to return, 1-100.")] = 20,
    offset: Annotated[int, Field(ge=0, description="Skip this many matches first, for paging.")] = 0,
    fields: Annotated[
        list[str] | None,
        Field(description=f"Return only these columns of each email. Any of: {', '.join(COLUMNS)}."),
    ] = None,
) -> QueryResult:
    columns = _columns(fields)
    clauses, params = _filters(sender, date_from, date_to)
    order = _order_by(keywords)
    with connect() as con:
        total = _count(con, keywords, clauses, params)
        if columns is None:
            emails = _fetch_summaries(con, keywords, clauses, params, order, limit, offset)
        else:
            emails = _fetch_projected(con, columns, keywords, clauses, params, order, limit, offset)
    return QueryResult(total=total, offset=offset, emails=emails)


@app.tool(
    description="Read one complete email by id: sender, recipients, date, subject, thread id and full body.",
    annotations=READ_ONLY,
)
def get_email(
    email_id: Annotated[int, Field(description="The email's id, as returned by query_email_database.")],
) -> Email:
    with connect() as con:
        row = con.execute(f"SELECT {', '.join(COLUMNS)} FROM emails WHERE id = ?", (email_id,)).fetchone()
    if row is None:
        raise ToolError(f"no email with id {email_id}")
    return Email(**dict(row))


@app.tool(
    description="Count the emails matching keywords, sender and a date range, without listing them. "
    "Filters work exactly as in query_email_database.",
    annotations=READ_ONLY,
)
def count_emails(
    keywords: Keywords = None,
    sender: Sender = None,
    date_from: DateFrom = None,
    date_to: DateTo = None,
) -> CountResult:
    clauses, params = _filters(sender, date_from, date_to)
    with connect() as con:
        return CountResult(count=_count(con, keywords, clauses, params))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="emailindex MCP server (stdio unless --http is given).")
    parser.add_argument("--http", type=int, metavar="PORT", help="Serve streamable HTTP on PORT at /mcp.")
    parser.add_argument("--host", default="127.0.0.1", help="Interface for --http (default 127.0.0.1).")
    args = parser.parse_args(argv)
    ensure_archive(db_path())
    if args.http is None:
        app.run()
    else:
        app.run("streamable-http", host=args.host, port=args.http, streamable_http_path="/mcp")


if __name__ == "__main__":
    main()
