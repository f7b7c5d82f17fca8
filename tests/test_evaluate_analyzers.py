"""Each Phase 2 analyzer on hand-written traces: what it must flag, and what it must leave alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from trace_builder import call, ctx_of, make_trace, say

from mcpipechekr.artifacts import read_trace
from mcpipechekr.artifacts.baseline import BaselineEntry
from mcpipechekr.evaluate.base import Budgets
from mcpipechekr.evaluate.call_count import CallCount
from mcpipechekr.evaluate.costing import price
from mcpipechekr.evaluate.date_windows import DateWindows
from mcpipechekr.evaluate.error_workaround import ErrorWorkaround, error_key
from mcpipechekr.evaluate.oversized import OversizedResults
from mcpipechekr.evaluate.pagination import PaginationWalk
from mcpipechekr.evaluate.repeated_calls import RepeatedCalls
from mcpipechekr.evaluate.unread_fields import UnreadFields
from mcpipechekr.evaluate.wrong_tool import WrongTool
from mcpipechekr.tasks import Task

FIXTURES = Path(__file__).parent / "fixtures" / "traces"
T0 = "2026-12-01T09:00:00Z"


def task(task_id: str = "t", **fields) -> Task:
    return Task(task_id=task_id, prompt="p", task_type=fields.pop("task_type", "deterministic"), **fields)


def count(n: int) -> dict:
    return {"count": n}


def page(total: int, offset: int, ids: list[int]) -> dict:
    return {"total": total, "offset": offset, "emails": [{"id": i, "subject": f"subject {i}"} for i in ids]}


# --- date windows -------------------------------------------------------------------------------


def test_date_walk_forward_is_a_feature_gap_with_its_windows() -> None:
    ctx = ctx_of(read_trace(FIXTURES / "find-first__demo__r001.json"))
    [sighting] = DateWindows().analyze(ctx)
    assert sighting.id == "GAP-no-date-sort-query-email-database"
    assert sighting.steps == [1, 2, 3] and sighting.wasted == [1, 2]
    assert [(w["from"], w["to"], w["found"]) for w in sighting.details["windows"]] == [
        ("2011-01-01", "2011-12-31", 0),
        ("2012-01-01", "2012-12-31", 0),
        ("2013-01-01", "2013-12-31", 2),
    ]
    assert (
        "add a sort_order parameter (date_asc/date_desc) to query_email_database"
        in sighting.acceptance_criteria
    )
    cost = price(sighting, ctx)
    wasted = sum(ctx.trace.steps[i].result_tokens_estimated for i in (1, 2))
    assert cost.gap > wasted > 0


def test_backward_walk_with_a_counting_tool_names_the_listing_tool() -> None:
    trace = make_trace(
        "latest",
        [
            call("count_emails", {"sender": "ron", "date_from": "2026-01-01"}, count(0)),
            call(
                "count_emails",
                {"sender": "ron", "date_from": "2025-01-01", "date_to": "2025-12-31"},
                count(0),
            ),
            call(
                "count_emails",
                {"sender": "ron", "date_from": "2024-01-01", "date_to": "2024-12-31"},
                count(4),
            ),
            call("get_email", {"email_id": 1}, {"id": 1}),
            call(
                "query_email_database",
                {"sender": "ron", "date_from": "2024-01-01", "date_to": "2024-12-31", "limit": 50},
                page(4, 0, [1, 2, 3, 4]),
            ),
        ],
    )
    [sighting] = DateWindows().analyze(ctx_of(trace))
    assert sighting.tool == "query_email_database" and sighting.details["direction"] == "backward"
    assert sighting.details["walked_tool"] == "count_emails"
    assert sighting.steps == [0, 1, 2, 4] and sighting.wasted == [0, 1, 2]
    assert "date_desc" in sighting.acceptance_criteria[1]


@pytest.mark.parametrize(
    "calls",
    [
        pytest.param(  # a comparison of two adjacent years: both found something
            [
                call(
                    "count_emails",
                    {"sender": "dana", "date_from": "2019-01-01", "date_to": "2019-12-31"},
                    count(29),
                ),
                call(
                    "count_emails",
                    {"sender": "dana", "date_from": "2020-01-01", "date_to": "2020-12-31"},
                    count(31),
                ),
            ],
            id="comparison",
        ),
        pytest.param(  # narrowing inside one window is not a walk
            [
                call(
                    "count_emails",
                    {"sender": "x", "date_from": "2019-01-01", "date_to": "2019-12-31"},
                    count(0),
                ),
                call(
                    "count_emails",
                    {"sender": "x", "date_from": "2019-03-01", "date_to": "2019-03-31"},
                    count(0),
                ),
                call(
                    "count_emails",
                    {"sender": "x", "date_from": "2019-03-10", "date_to": "2019-03-12"},
                    count(1),
                ),
            ],
            id="narrowing",
        ),
        pytest.param(  # jumps between far-apart periods
            [
                call(
                    "count_emails",
                    {"sender": "x", "date_from": "2012-01-01", "date_to": "2012-12-31"},
                    count(0),
                ),
                call(
                    "count_emails",
                    {"sender": "x", "date_from": "2015-01-01", "date_to": "2015-12-31"},
                    count(0),
                ),
                call(
                    "count_emails",
                    {"sender": "x", "date_from": "2019-01-01", "date_to": "2019-12-31"},
                    count(2),
                ),
            ],
            id="jumps",
        ),
        pytest.param(  # adjacent windows, but each call searches something else
            [
                call(
                    "count_emails",
                    {"keywords": "a", "date_from": "2012-01-01", "date_to": "2012-12-31"},
                    count(0),
                ),
                call(
                    "count_emails",
                    {"keywords": "b", "date_from": "2013-01-01", "date_to": "2013-12-31"},
                    count(0),
                ),
                call(
                    "count_emails",
                    {"keywords": "c", "date_from": "2014-01-01", "date_to": "2014-12-31"},
                    count(0),
                ),
            ],
            id="different-filters",
        ),
    ],
)
def test_date_filters_that_are_not_a_walk(calls: list[dict]) -> None:
    assert DateWindows().analyze(ctx_of(make_trace("t", calls))) == []


# --- error then workaround ----------------------------------------------------------------------


def test_error_then_workaround_is_a_bug_with_the_error_text_and_the_projection() -> None:
    ctx = ctx_of(read_trace(FIXTURES / "office-move__demo__r001.json"))
    [sighting] = ErrorWorkaround().analyze(ctx)
    assert sighting.id == "BUG-no-such-column-fts-rank-query-email-database"
    assert sighting.type == "bug" and sighting.steps == [0, 2] and sighting.wasted == [0]
    assert "no such column: fts.rank" in sighting.observed
    assert sighting.details["dropped_arguments"] == ["fields"]
    assert "date_from, date_to, keywords combined with fields must return the projected fields" in (
        sighting.acceptance_criteria
    )
    cost = price(sighting, ctx)
    failed, workaround = ctx.trace.steps[0], ctx.trace.steps[2]
    # The optimum is the working result cut down to subject and date: cheaper than what was received.
    assert cost.optimal < workaround.result_tokens_estimated
    assert cost.gap > failed.result_tokens_estimated


def test_a_corrected_input_mistake_is_a_low_bug_named_for_the_error() -> None:
    """An error the server returned is a bug, whatever the agent did next: never a DSC- finding."""
    trace = make_trace(
        "t",
        [
            call(
                "count_emails",
                {"date_from": "2019/01/01"},
                error="date_from '2019/01/01' is not a date; use YYYY-MM-DD",
            ),
            call("count_emails", {"date_from": "2019-01-01"}, count(3)),
        ],
    )
    [sighting] = ErrorWorkaround().analyze(ctx_of(trace))
    assert sighting.type == "bug" and sighting.severity == "low"
    assert sighting.id == "BUG-date-from-is-not-a-date-use-yyyy-count-emails"
    assert "description and schema say which values it accepts" in sighting.expected


def test_error_key_keeps_the_stable_core() -> None:
    assert (
        error_key("Error executing tool q: database error: no such column: fts.rank")
        == "no such column fts rank"
    )
    assert error_key("no email with id 4711") == error_key("no email with id 12")


def test_an_error_id_names_its_tool_once() -> None:
    """`Error executing tool get_book`, nothing after it, was `BUG-error-executing-tool-get-book-get-book`."""
    trace = make_trace(
        "t",
        [
            call("get_book", {"id": 7}, error="Error executing tool get_book"),
            call("get_book", {"id": 8}, {"id": 8}),
        ],
    )
    [sighting] = ErrorWorkaround().analyze(ctx_of(trace))
    assert sighting.id == "BUG-error-get-book"
    assert error_key("unknown field in get_book: title", "get_book") == "unknown field in title"


# --- repeated calls, pagination -----------------------------------------------------------------


def test_repeated_identical_calls_in_any_key_order() -> None:
    trace = make_trace(
        "t",
        [
            call("get_email", {"email_id": 7, "x": 1}, {"id": 7}),
            call("get_email", {"x": 1, "email_id": 7}, {"id": 7}),
            call("get_email", {"email_id": 8, "x": 1}, {"id": 8}),
        ],
    )
    [sighting] = RepeatedCalls().analyze(ctx_of(trace))
    assert (
        sighting.id == "EFF-repeated-calls-get-email" and sighting.steps == [0, 1] and sighting.wasted == [1]
    )


def test_a_legitimate_two_call_sequence_is_not_flagged() -> None:
    trace = make_trace(
        "lookup",
        [
            call("query_email_database", {"keywords": "garage"}, page(1, 0, [2918])),
            say("Found it; reading the email."),
            call(
                "get_email", {"email_id": 2918}, {"id": 2918, "subject": "Parking garage", "body": "Closed."}
            ),
        ],
        answer="Email 2918, Parking garage: closed.",
    )
    lookup = task("lookup", expected_tool="get_email", min_calls=2)
    ctx = ctx_of(trace, lookup)
    for analyzer in (
        CallCount(),
        RepeatedCalls(),
        DateWindows(),
        PaginationWalk(),
        ErrorWorkaround(),
        WrongTool(),
    ):
        assert analyzer.analyze(ctx) == [], analyzer.name


def test_paging_that_stops_early_is_flagged_and_reading_to_the_end_is_not() -> None:
    early = make_trace(
        "t",
        [
            call("query_email_database", {"keywords": "x"}, page(300, 0, list(range(100)))),
            call(
                "query_email_database",
                {"keywords": "x", "offset": 100},
                page(300, 100, list(range(100, 200))),
            ),
        ],
    )
    [sighting] = PaginationWalk().analyze(ctx_of(early))
    assert sighting.id == "GAP-paging-to-find-query-email-database" and sighting.wasted == [0]
    full = make_trace(
        "t",
        [
            call("query_email_database", {"keywords": "x", "limit": 100}, page(150, 0, list(range(100)))),
            call(
                "query_email_database",
                {"keywords": "x", "limit": 100, "offset": 100},
                page(150, 100, list(range(50))),
            ),
        ],
    )
    assert PaginationWalk().analyze(ctx_of(full)) == []


# --- call count, wrong tool, oversized ------------------------------------------------------------


def test_call_count_against_the_minimum_and_its_priced_optimum() -> None:
    calls = [call("count_emails", {"keywords": f"w{i}"}, count(i)) for i in range(6)]
    trace = make_trace("t", calls)
    entry = BaselineEntry(
        task_id="t",
        result=1,
        plausibility_score=1,
        evaluator="rules",
        timestamp=T0,
        calls=1,
        reference_tokens=10,
    )
    [sighting] = CallCount().analyze(ctx_of(trace, task("t"), entry))
    assert sighting.details == {
        "calls": 6,
        "min_calls": 1,
        "ratio": 6.0,
        "calls_by_tool": {"count_emails": 6},
    }
    assert price(sighting, ctx_of(trace, task("t"), entry)).optimal == 10
    assert CallCount().analyze(ctx_of(make_trace("t", calls[:1]), task("t", min_calls=1))) == []
    assert CallCount().analyze(ctx_of(trace, task("t"))) == [], "no minimum known: nothing to compare"


def test_wrong_tool_never_used_and_used_late() -> None:
    expected = task("t", expected_tool="count_emails", min_calls=1)
    never = make_trace("t", [call("query_email_database", {"keywords": "x"}, page(3, 0, [1, 2, 3]))])
    [sighting] = WrongTool().analyze(ctx_of(never, expected))
    assert sighting.id == "DSC-wrong-tool-query-email-database"
    assert (sighting.tool, sighting.expected_tool) == ("query_email_database", "count_emails")
    late = make_trace(
        "t",
        [
            call("query_email_database", {"keywords": "x"}, page(3, 0, [1, 2, 3])),
            call("count_emails", {"keywords": "x"}, count(3)),
        ],
    )
    [sighting] = WrongTool().analyze(ctx_of(late, expected))
    assert sighting.id == "DSC-late-tool-query-email-database" and sighting.wasted == [0]


def test_oversized_results_far_above_the_budget_only() -> None:
    big = {"emails": [{"body": "x" * 4000}]}
    trace = make_trace(
        "t", [call("query_email_database", {}, big), call("get_email", {"email_id": 1}, {"id": 1})]
    )
    budgets = Budgets(default=4000, per_tool={"query_email_database": 500})
    [sighting] = OversizedResults().analyze(ctx_of(trace, budgets=budgets))
    assert sighting.id == "EFF-oversized-result-query-email-database"
    cost = price(sighting, ctx_of(trace, budgets=budgets))
    assert cost.gap == trace.steps[0].result_tokens_estimated - 500
    assert OversizedResults().analyze(ctx_of(trace)) == [], "within 2x the default budget"


# --- fetched but never read -----------------------------------------------------------------------


def _emails() -> dict:
    return {
        "total": 1,
        "emails": [
            {
                "id": 4089,
                "thread_id": "th-ron-2013a",
                "date": "2013-05-14T10:12:37",
                "subject": "Third floor heating: contractor recommendation",
                "amount": 3800,
                "snippet": "I recommend Ron Chinn of Baypoint Mechanical for the heating job; he quoted "
                "a fair price and can start in June once the landlord signs off on the works.",
            }
        ],
    }


def test_unread_fields_are_priced_and_named() -> None:
    trace = make_trace(
        "t",
        [call("query_email_database", {"keywords": "Ron Chinn"}, _emails())],
        answer="Email 4089: Third floor heating: contractor recommendation.",
    )
    [sighting] = UnreadFields(min_tokens=10, min_share=0.1, min_tokens_per_call=10).analyze(ctx_of(trace))
    unread = sighting.details["unread_fields"]
    assert set(unread) == {"emails[].thread_id", "emails[].date", "emails[].amount", "emails[].snippet"}
    assert unread["emails[].snippet"] > unread["emails[].thread_id"] > 0
    assert abs(price(sighting, ctx_of(trace)).gap - sum(unread.values())) <= len(unread)  # rounding per field


def test_a_short_field_of_each_record_is_not_a_response_worth_changing() -> None:
    """Names read, their e-mail addresses not: how person records look, a few tokens a row. A floor
    plan and a maintenance log around the one field asked for are a response worth a server change."""
    people = {"attendees": [{"name": f"Person {n}", "email": f"person{n}@example.org"} for n in range(5)]}
    pages = make_trace(
        "t",
        [call("get_attendees", {"meeting": "m1", "page": page}, people) for page in (1, 2, 3)],
        answer=", ".join(f"Person {n}" for n in range(5)),
    )
    assert UnreadFields().analyze(ctx_of(pages)) == []
    room = {
        "name": "Vega",
        "access": "badge B",
        "floor_plan_svg": "<svg>" + "<path d='M0 0 L10 10'/>" * 300 + "</svg>",
        "maintenance_log": [{"date": f"2026-01-{n % 28 + 1:02d}", "job": f"job {n}"} for n in range(80)],
    }
    heavy = make_trace("t", [call("room_details", {"room": "Vega"}, room)], answer="Vega: badge B")
    [sighting] = UnreadFields().analyze(ctx_of(heavy))
    assert sighting.tool == "room_details" and "floor_plan_svg" in sighting.details["unread_fields"]


def test_a_field_read_under_a_different_formatting_counts_as_read() -> None:
    trace = make_trace(
        "t",
        [
            call("query_email_database", {"keywords": "Ron Chinn"}, _emails()),
            say("Thread th-ron-2013a looks right; he quoted a fair price and can start in June."),
        ],
        answer="On May 14, 2013 (email 4089, THIRD FLOOR HEATING - contractor recommendation) "
        "he quoted $3,800.",
    )
    assert UnreadFields(min_tokens=1, min_share=0.0).analyze(ctx_of(trace)) == []
