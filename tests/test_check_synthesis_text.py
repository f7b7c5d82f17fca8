"""Argument synthesis from text: descriptions and refusals say what a tool accepts (check/hints.py).

tests/servers/sales_db_server.py is shaped like a published SQLite server: a
`list_tables` that prints Python lists and a `read_query` that answers "Only
SELECT queries are allowed" to anything else; beside it, a date whose format
only a parameter's description gives, a date only a docstring's example gives,
an enum only an error lists, a tool that refuses everything while listing
values, and a tool that changes state. The server is checked once per module,
with `check.synthesis_max_calls: 4`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import mcp_types
import pytest

from mcpipechekr.artifacts.check_report import CheckReport, CheckResult
from mcpipechekr.check.candidates import candidates
from mcpipechekr.check.hints import described_values, generate_matching, refusal_values, sql_like
from mcpipechekr.check.orchestrate import run_check
from mcpipechekr.check.sources import ValuePool
from mcpipechekr.config import Config, ServerConfig

pytestmark = pytest.mark.xdist_group("test_check_synthesis_text")

SERVERS = Path(__file__).resolve().parent / "servers"
MAX_CALLS = 4


def by_id(report: CheckReport) -> dict[str, CheckResult]:
    return {result.id: result for result in report.checks}


@pytest.fixture(scope="module")
def sales(tmp_path_factory: pytest.TempPathFactory) -> CheckReport:
    folder = tmp_path_factory.mktemp("sales")
    server = ServerConfig(name="sales-db", command=sys.executable, args=[str(SERVERS / "sales_db_server.py")])
    config = Config.model_validate(
        {"server": server.model_dump(), "check": {"synthesis_max_calls": MAX_CALLS, "synthesis_time_s": 5}}
    )
    return run_check(config, layers=["protocol"], call_timeout_s=10, log_path=folder / "log")


def test_the_query_tool_is_reached_through_its_error_and_a_listed_table(sales) -> None:
    checks = by_id(sales)
    result = checks["PC-10:read_query"]
    assert result.status == "PASS", result
    attempts = result.details["attempts"]
    # first a listed name as it came (what check sent before), refused with the hint, then a SELECT
    assert attempts[0]["arguments"] == {"query": "customers"}
    assert attempts[0]["message"].endswith("Only SELECT queries are allowed for read_query")
    assert [attempt["outcome"] for attempt in attempts] == ["refused", "reached"]
    assert result.details["arguments"] == {"query": "SELECT * FROM customers LIMIT 1"}
    assert result.details["sources"] == {
        "query": "the error's SQL hint and a table in the result of list_tables"
    }
    assert sales.coverage is not None
    entry = next(tool for tool in sales.coverage.tools if tool.tool == "read_query")
    assert (entry.status, entry.calls) == ("reached", 2)


def test_a_date_is_written_in_the_format_the_parameter_description_gives(sales) -> None:
    result = by_id(sales)["PC-10:sales_since"]
    assert result.status == "PASS", result
    assert result.details["arguments"] == {"since": "15/01/2020"}
    assert result.details["sources"] == {"since": "parameter description"}
    assert len(result.details["attempts"]) == 1


def test_an_example_in_the_tool_description_feeds_its_parameter(sales) -> None:
    result = by_id(sales)["PC-10:invoices_on"]
    assert result.status == "PASS", result
    assert result.details["arguments"]["when"] == "2024-03-15"
    assert result.details["sources"]["when"] == "tool description"


def test_an_enum_only_an_error_lists_is_tried_next(sales) -> None:
    result = by_id(sales)["PC-10:sales_report"]
    assert result.status == "PASS", result
    assert [attempt["outcome"] for attempt in result.details["attempts"]] == ["refused", "reached"]
    assert result.details["arguments"] == {"period": "daily"}
    assert result.details["sources"] == {"period": "the error's allowed values"}


def test_tries_stay_within_the_bound_and_a_state_changing_tool_is_never_called(sales) -> None:
    checks = by_id(sales)
    swatch = checks["PC-10:colour_swatch"]
    assert swatch.status == "SKIP" and swatch.reason.startswith("not reached: "), swatch
    assert len(swatch.details["attempts"]) == MAX_CALLS
    # the error's list was tried first, then the ranked candidates
    assert swatch.details["attempts"][1]["arguments"] == {"colour": "red"}
    for result in sales.checks:
        if result.id.startswith("PC-10:") and "attempts" in result.details:
            assert len(result.details["attempts"]) <= MAX_CALLS, result
    assert checks["PC-10:drop_table"].reason.startswith("not called"), checks["PC-10:drop_table"]
    assert (
        "attempts" not in checks["PC-10:drop_table"].details
        or not checks["PC-10:drop_table"].details["attempts"]
    )
    assert sales.coverage is not None
    assert "drop_table" not in {tool.tool for tool in sales.coverage.tools}


# --- the readers, one rule at a time ------------------------------------------------------------


def listing_pool() -> ValuePool:
    pool = ValuePool()
    text = "[{'name': 'books'}, {'name': 'authors'}]"
    block = mcp_types.TextContent(type="text", text=text)
    pool.add_result("list_tables", mcp_types.CallToolResult(content=[block]))
    return pool


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ('Run it, e.g. "SELECT * FROM users"', ["SELECT * FROM users"]),
        ("A branch such as 'main'", ["main"]),
        ("use `main` or `dev`", ["main", "dev"]),
        ("The day, format: YYYY-MM-DD", ["2020-01-15"]),
        ("First day (DD/MM/YYYY)", ["15/01/2020"]),
        ("the day, e.g. 2024-03-15", ["2024-03-15"]),
        ("Sort order, one of asc, desc", ["asc", "desc"]),
        ("Either 'json' or 'text'", ["json", "text"]),
        ("Must match the pattern ^[A-Z]{2}-\\d{3}$", ["AA-111"]),
        ("An ISO 8601 timestamp", ["2020-01-15T12:00:00Z"]),
        ("A name such as the title of a book", []),
        ("Must be a positive integer", []),
    ],
)
def test_values_a_description_gives(text: str, values: list[str]) -> None:
    assert described_values(text) == values


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("period must be one of: daily, weekly, monthly", ["daily", "weekly", "monthly"]),
        ("Input should be 'asc' or 'desc'", ["asc", "desc"]),
        ("Invalid enum value. Expected 'json' | 'text', received 'a'", ["json", "text"]),
        ("code must match ^INV-\\d{4}$", ["INV-1111"]),
        ("invalid date format, expected YYYY-MM-DD", ["2020-01-15"]),
        (
            "Only SELECT queries are allowed",
            ["SELECT * FROM books LIMIT 1", "SELECT * FROM authors LIMIT 1", "SELECT 1"],
        ),
        ("Table 'a' not found", ["books", "authors"]),
        ("please select a branch first", []),
        ("the archive is offline", []),
    ],
)
def test_values_a_refusal_points_to(text: str, values: list[str]) -> None:
    assert [value for value, _ in refusal_values(text, "a", False, listing_pool())] == values


def test_no_such_table_in_a_refused_select_offers_the_other_listed_tables() -> None:
    offered = refusal_values("no such table: books", "SELECT * FROM books", False, listing_pool())
    assert [value for value, _ in offered] == ["SELECT * FROM authors LIMIT 1", "SELECT 1"]


def test_sql_parameters_are_told_by_name_or_description_and_a_bare_query_is_a_search() -> None:
    assert sql_like("sql", "")
    assert sql_like("query", "Execute a SELECT query on the SQLite database")
    assert sql_like("statement", "")
    assert not sql_like("query", "Search the archive for documents")
    assert not sql_like("query", "")


def test_a_described_sql_query_gets_a_select_over_a_listed_table_first() -> None:
    tool = mcp_types.Tool(
        name="read_query",
        description="Execute a SELECT query on the SQLite database",
        input_schema={
            "type": "object",
            "properties": {"query": {"type": "string", "description": "SELECT SQL query to execute"}},
            "required": ["query"],
        },
    )
    offered = [candidate.arguments["query"] for candidate in candidates(tool, listing_pool(), limit=4)]
    assert offered[:3] == ["SELECT * FROM books LIMIT 1", "SELECT * FROM authors LIMIT 1", "SELECT 1"]


def test_a_value_from_text_is_typed_to_its_parameter() -> None:
    tool = mcp_types.Tool(
        name="recent",
        description="Recent rows.",
        input_schema={
            "type": "object",
            "properties": {
                "limit": {"type": "integer", "description": "Most rows, e.g. 50; dates as YYYY-MM-DD"},
                "since": {"type": "string", "description": "From this day, e.g. 50 or YYYY-MM-DD"},
            },
            "required": ["limit", "since"],
        },
    )
    first = candidates(tool, ValuePool(), limit=1)[0]
    assert first.arguments == {"limit": 50, "since": "50"}
    limits = {c.arguments["limit"] for c in candidates(tool, ValuePool(), limit=8)}
    assert all(isinstance(value, int) for value in limits)  # no date reaches the integer


def test_a_complex_pattern_is_given_up_not_guessed() -> None:
    assert generate_matching(r"^(a)\1$") is None
