"""Who a bug is about and who can fix it, on traces of servers other than the bundled example.

Each bug names the tool where the waste happened and, when another tool should
have been used, that one; extra calls are reported from the first one above
the minimum; each wasted step is priced by one bug only; errors that reveal a
defect in the server's code are bugs whatever the agent did next; and every
bug says whether the server (`server`) or only the model (`agent`) can remove it.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime

from trace_builder import call, ctx_of, make_trace, say

from mcpipechekr.artifacts.baseline import BaselineEntry
from mcpipechekr.artifacts.bug_report import Bug, BugReport
from mcpipechekr.evaluate.aggregate import Occurrence, folded, merge, priority_order
from mcpipechekr.evaluate.base import Budgets, TraceContext
from mcpipechekr.evaluate.call_count import CallCount
from mcpipechekr.evaluate.costing import price
from mcpipechekr.evaluate.error_workaround import ErrorWorkaround
from mcpipechekr.evaluate.narrative import llm_bugs, render_narrative
from mcpipechekr.evaluate.orchestrate import default_analyzers, evaluate_contexts, evaluate_trace
from mcpipechekr.evaluate.oversized import OversizedResults
from mcpipechekr.evaluate.repeated_calls import RepeatedCalls
from mcpipechekr.evaluate.unread_fields import UnreadFields
from mcpipechekr.evaluate.wrong_tool import WrongTool
from mcpipechekr.tasks import ReferenceCall, Task

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def task(task_id: str = "t", **fields) -> Task:
    return Task(task_id=task_id, prompt="p", task_type="deterministic", **fields)


def book(isbn: str) -> dict:
    return {"isbn": isbn, "title": f"Title {isbn}", "author": "Ann Lee", "price": 12}


def search(*isbns: str) -> dict:
    return {"total": len(isbns), "books": [{"isbn": isbn, "title": f"Title {isbn}"} for isbn in isbns]}


def baseline(task_id: str, calls: int, reference_tokens: int | None = None) -> BaselineEntry:
    return BaselineEntry(
        task_id=task_id,
        result="Title 111",
        plausibility_score=1,
        evaluator="rules",
        timestamp=T0,
        calls=calls,
        reference_tokens=reference_tokens,
    )


# --- attribution ----------------------------------------------------------------------------------


def test_too_many_calls_names_the_tool_called_too_often_not_the_expected_one() -> None:
    lookup = task(
        "cheapest-by-author",
        expected_tool="search_books",
        reference_calls=[ReferenceCall(tool="search_books", arguments={"author": "Ann Lee"})],
    )
    trace = make_trace(
        "cheapest-by-author",
        [
            call("search_books", {"author": "Ann Lee"}, search("111", "222", "333")),
            call("get_book", {"isbn": "111"}, book("111")),
            call("get_book", {"isbn": "222"}, book("222")),
            call("get_book", {"isbn": "333"}, book("333")),
        ],
        answer="Title 111, 12",
    )
    [sighting] = CallCount().analyze(ctx_of(trace, lookup))
    assert sighting.tool == "get_book" and sighting.expected_tool == "search_books"
    assert sighting.fixable_by == "agent" and sighting.severity == "high"  # 4 calls for 1: 4x the cost
    assert "`get_book` took 3 call(s) more" in sighting.observed


def test_extra_calls_count_from_the_first_one_above_the_minimum_severity_by_ratio() -> None:
    pantry = task("stock", min_calls=1)
    two = make_trace(
        "stock",
        [
            call("list_items", {"shelf": "a"}, {"items": ["rice"]}),
            call("list_items", {"shelf": "b"}, {"items": []}),
        ],
    )
    [double] = CallCount().analyze(ctx_of(two, pantry))
    assert double.severity == "medium" and double.details["ratio"] == 2.0, "2 calls for 1 is twice the cost"
    assert price(double, ctx_of(two, pantry)).gap > 0
    three = make_trace("stock", [call("list_items", {"shelf": s}, {"items": [s]}) for s in "abc"])
    [slight] = CallCount().analyze(ctx_of(three, task("stock", min_calls=2)))
    assert slight.severity == "low" and slight.extra_calls == 1


def test_legitimate_multi_call_tasks_are_not_flagged() -> None:
    steps = [call("get_note", {"note_id": n}, {"id": n, "text": f"note {n}"}) for n in (1, 2, 3)]
    trace = make_trace("three-notes", steps)
    by_reference = task(
        "three-notes",
        reference_calls=[ReferenceCall(tool="get_note", arguments={"note_id": n}) for n in (1, 2, 3)],
    )
    assert CallCount().analyze(ctx_of(trace, by_reference)) == []
    assert CallCount().analyze(ctx_of(trace, task("three-notes"), baseline("three-notes", calls=3))) == []
    assert CallCount().analyze(ctx_of(trace, task("three-notes"), baseline("three-notes", calls=2)))


def test_wrong_tool_names_the_misused_tool_and_the_one_to_use() -> None:
    shelf = task("count-jars", expected_tool="count_items", min_calls=1)
    never = make_trace(
        "count-jars",
        [
            call("list_shelves", {}, {"shelves": ["top", "low"]}),
            call("list_items", {"shelf": "top"}, {"items": ["jar", "jar"]}),
            call("list_items", {"shelf": "low"}, {"items": ["jar"]}),
        ],
    )
    [sighting] = WrongTool().analyze(ctx_of(never, shelf))
    assert sighting.id == "DSC-wrong-tool-list-items"
    assert sighting.tool == "list_items" and sighting.expected_tool == "count_items"
    assert sighting.fixable_by == "server"
    assert any("list_items's description" in criterion for criterion in sighting.acceptance_criteria)
    late = make_trace(
        "count-jars",
        [call("list_shelves", {}, {"shelves": ["top"]}), call("count_items", {"name": "jar"}, {"count": 3})],
    )
    [sighting] = WrongTool().analyze(ctx_of(late, shelf))
    assert sighting.id == "DSC-late-tool-list-shelves" and sighting.tool == "list_shelves"


def test_merged_wrong_tool_findings_keep_each_tasks_misused_and_expected_tool() -> None:
    """Two tasks that both spent their calls on `list_items` where each needed another tool: one bug
    named for `list_items`, and each task's evidence says which tool it should have used."""
    jars = task("count-jars", expected_tool="count_items", min_calls=1)
    price_of = task("price-of-jam", expected_tool="get_item", min_calls=1)
    first = make_trace("count-jars", [call("list_items", {"shelf": "top"}, {"items": ["jar"]})])
    second = make_trace(
        "price-of-jam",
        [
            call("list_shelves", {}, {"shelves": ["top", "low"]}),
            call("list_items", {"shelf": "top"}, {"items": ["jam"]}),
            call("list_items", {"shelf": "low"}, {"items": []}),
        ],
    )
    report, _ = evaluate_contexts(
        [ctx_of(first, jars), ctx_of(second, price_of)],
        run_id="run-20261201-001",
        phase1_provider="demo",
        threshold=0.2,
        analyzers=[WrongTool()],
    )
    ids = [bug.id for bug in report.bugs]
    assert "DSC-wrong-tool-list-items" in ids, ids
    (bug,) = [bug for bug in report.bugs if bug.id == "DSC-wrong-tool-list-items"]
    assert bug.tool == "list_items" and bug.task_ids == ["count-jars", "price-of-jam"]
    assert {(e.task_id, e.expected_tool) for e in bug.evidence} == {
        ("count-jars", "count_items"),
        ("price-of-jam", "get_item"),
    }
    assert bug.details["tools_used"] == ["list_items", "list_shelves"]


def test_every_analyzer_names_the_tool_where_the_waste_happened() -> None:
    bookshop = task("t", expected_tool="search_books")
    heavy = {"books": [{"isbn": str(n), "title": f"T{n}", "blurb": "long text " * 60} for n in range(8)]}
    trace = make_trace(
        "t",
        [
            call("search_books", {"q": "it's"}, error='near "s": syntax error'),
            call("search_books", {"q": "its"}, heavy),
            call("get_book", {"isbn": "1"}, book("1")),
            call("get_book", {"isbn": "1"}, book("1")),
        ],
        answer="T1",
    )
    ctx = ctx_of(trace, bookshop)
    ctx.budgets = Budgets(default=100)
    every_field = UnreadFields(min_tokens=1, min_share=0.0, min_tokens_per_call=0)  # attribution only
    tools = {
        analyzer.name: {sighting.tool for sighting in analyzer.analyze(ctx)}
        for analyzer in (ErrorWorkaround(), RepeatedCalls(), every_field, OversizedResults())
    }
    assert tools == {
        "error_workaround": {"search_books"},
        "repeated_calls": {"get_book"},
        "unread_fields": {"search_books", "get_book"},
        "oversized": {"search_books"},
    }


# --- errors that reveal a defect --------------------------------------------------------------------


def test_an_sql_syntax_error_on_a_quoted_input_is_a_high_bug_even_when_the_agent_corrected_it() -> None:
    trace = make_trace(
        "by-title",
        [
            call(
                "search_books",
                {"title": "Ender's Game"},
                error='sqlite3.OperationalError: near "s": syntax error',
            ),
            call("search_books", {"title": "Enders Game"}, search("999")),
        ],
    )
    [sighting] = ErrorWorkaround().analyze(ctx_of(trace))
    assert sighting.type == "bug" and sighting.id.startswith("BUG-") and sighting.severity == "high"
    assert sighting.details["defect"] == "SQL syntax error" and sighting.fixable_by == "server"
    assert any("never a SQL syntax error" in criterion for criterion in sighting.acceptance_criteria)


def test_tracebacks_and_internal_errors_are_bugs_a_plain_rejection_a_low_one() -> None:
    traceback = make_trace(
        "note",
        [
            call(
                "get_note", {"note_id": "7"}, error="Traceback (most recent call last):\n  KeyError: 'body'"
            ),
            call("get_note", {"note_id": "8"}, {"id": 8, "text": "hi"}),
        ],
    )
    [crash] = ErrorWorkaround().analyze(ctx_of(traceback))
    assert (crash.type, crash.severity, crash.details["defect"]) == ("bug", "medium", "Python traceback")
    internal = make_trace(
        "note", [call("get_note", {"note_id": "7"}, error="MCP error -32603: Internal error")]
    )
    [gave_up] = ErrorWorkaround().analyze(ctx_of(internal))
    assert (gave_up.type, gave_up.severity, gave_up.details["defect"]) == ("bug", "high", "internal error")
    rejected = make_trace(
        "note",
        [
            call("get_note", {"note_id": "seven"}, error="note_id must be a number, e.g. 7"),
            call("get_note", {"note_id": "7"}, {"id": 7, "text": "hi"}),
        ],
    )
    [described] = ErrorWorkaround().analyze(ctx_of(rejected))
    assert (described.type, described.severity) == ("bug", "low") and "defect" not in described.details


# --- one step, one price -----------------------------------------------------------------------------


def _priced(ctx: TraceContext) -> dict[str, object]:
    outcome, notes = evaluate_trace(ctx, default_analyzers(), 0.2)
    assert notes == []
    return {sighting.id: (sighting, price(sighting, ctx)) for sighting in outcome.sightings}


def test_a_needless_call_is_priced_once_and_the_other_bug_points_to_it() -> None:
    shelf = task("count-jars", expected_tool="count_items", min_calls=1)
    trace = make_trace(
        "count-jars",
        [
            call("list_items", {"shelf": "top"}, {"items": ["jar", "jar"]}),
            say("Let me count them properly."),
            call("list_items", {"shelf": "top"}, {"items": ["jar", "jar"]}),
            say("Now the counting tool."),
            call("count_items", {"name": "jar"}, {"count": 2}),
        ],
        answer="2 jars",
    )
    priced = _priced(ctx_of(trace, shelf))
    late, late_cost = priced["DSC-late-tool-list-items"]
    repeat, repeat_cost = priced["EFF-repeated-calls-list-items"]
    # both list_items calls came before the counting tool: the server's lever (its description) prices
    # them, and the repeat, which saw step 2 too, points to it at no cost
    assert late.wasted == [0, 2] and late.fixable_by == "server"
    assert repeat.wasted == [] and repeat.see_also == [late.id] and repeat_cost.gap == 0
    owners: dict[int, str] = {}
    for sighting, _ in priced.values():
        if sighting.analyzer in ("call_count", "correctness"):
            continue  # summaries: they price what the others leave unexplained, below
        for step in sighting.wasted:
            assert step not in owners, f"step {step} priced by {owners.get(step)} and {sighting.id}"
            owners[step] = sighting.id
    too_many, cost = priced["EFF-too-many-calls-count-jars"]
    assert too_many.tool == "list_items" and too_many.expected_tool == "count_items"
    assert too_many.see_also == [late.id] and late_cost.gap > 0
    ctx = ctx_of(trace, shelf)
    alone = price(dataclasses.replace(too_many, explained_tokens=0), ctx).gap
    assert late_cost.gap + cost.gap == max(alone, late_cost.gap), "the trace's waste is counted once"


def test_an_oversized_result_with_unread_fields_is_priced_once() -> None:
    heavy = {"books": [{"isbn": str(n), "title": f"T{n}", "blurb": f"story {n} " * 80} for n in range(6)]}
    trace = make_trace("t", [call("search_books", {"q": "x"}, heavy)], answer="T1 (isbn 1)")
    ctx = ctx_of(trace, task("t"))
    ctx.budgets = Budgets(default=200)
    priced = _priced(ctx)
    unread, unread_cost = priced["EFF-unread-fields-search-books"]
    oversized, oversized_cost = priced["EFF-oversized-result-search-books"]
    assert unread_cost.gap > 0 and oversized.see_also == [unread.id] and oversized_cost.gap == 0
    bugs = merge([Occurrence(s, ctx, c) for s, c in priced.values()])  # type: ignore[misc]
    assert {bug.id: bug.see_also for bug in bugs}[oversized.id] == [unread.id]


# --- who can fix it, and in which order -----------------------------------------------------------------


def test_the_narrative_priorities_are_the_review_order_and_mark_agent_bugs() -> None:
    def bug(bug_id: str, severity: str, gap: int, fixable_by: str = "server") -> Bug:
        kind = {"BUG": "bug", "EFF": "efficiency", "DSC": "description", "COR": "correctness"}[bug_id[:3]]
        return Bug(
            id=bug_id,
            type=kind,  # type: ignore[arg-type]
            severity=severity,  # type: ignore[arg-type]
            source="analyzer",
            tool="search_books",
            trigger="t",
            observed="o",
            expected="e",
            token_cost_observed=gap,
            token_cost_optimal=0,
            token_cost_of_gap=gap,
            fixable_by=fixable_by,  # type: ignore[arg-type]
        )

    bugs = [
        bug("EFF-too-many-calls-t", "high", 9000, "agent"),
        bug("EFF-unread-fields-search-books", "medium", 3000),
        bug("BUG-syntax-error-search-books", "high", 40),
        bug("COR-wrong-answer-t", "high", 500, "agent"),
        bug("DSC-wrong-tool-get-book", "medium", 3000),
    ]
    report = BugReport(run_id="run-20261201-001", phase1_provider="demo", evaluated_at=T0, bugs=bugs)
    text = render_narrative(report, traces=1)
    listed = re.findall(r"^\d+\. (\S+) .*$", text, flags=re.M)
    assert (
        listed
        == [b.id for b in priority_order(bugs)]
        == [
            "BUG-syntax-error-search-books",
            "DSC-wrong-tool-get-book",
            "EFF-unread-fields-search-books",
            "EFF-too-many-calls-t",
            "COR-wrong-answer-t",
        ]
    )
    agent_lines = [line for line in text.splitlines() if "not sent to the fix loop" in line]
    assert [line.split()[1] for line in agent_lines] == ["EFF-too-many-calls-t", "COR-wrong-answer-t"]

    # a finding whose every step another bug prices has no rank of its own: it is listed under its owner
    priced = bug("EFF-repeated-calls-search-books", "medium", 0).model_copy(
        update={"see_also": ["EFF-unread-fields-search-books"]}
    )
    report = report.model_copy(update={"bugs": [*bugs, priced]})
    text = render_narrative(report, traces=1)
    assert "EFF-repeated-calls-search-books" not in re.findall(r"^\d+\. (\S+) .*$", text, flags=re.M)
    (owner,) = [line for line in text.splitlines() if line.startswith("3. EFF-unread-fields-search-books")]
    assert owner.endswith("; also covers EFF-repeated-calls-search-books (no cost of their own)")
    ranked, inside = folded(priority_order(report.bugs))
    assert len(ranked) == 5 and [b.id for b in inside["EFF-unread-fields-search-books"]] == [priced.id]


def test_the_fields_of_a_call_that_should_not_have_been_made_are_priced_with_the_call() -> None:
    heavy = {"isbn": "1", "title": "T1", "blurb": "a long story " * 120}
    trace = make_trace(
        "t",
        [call("get_book", {"isbn": "1"}, heavy), call("get_book", {"isbn": "1"}, heavy)],
        answer="T1",
    )
    priced = _priced(ctx_of(trace, task("t")))
    repeat, repeat_cost = priced["EFF-repeated-calls-get-book"]
    unread, unread_cost = priced["EFF-unread-fields-get-book"]
    assert repeat.wasted == [1] and repeat_cost.gap > 0
    assert unread.see_also == [repeat.id] and 0 < unread_cost.gap
    whole = UnreadFields().analyze(ctx_of(trace, task("t")))[0]
    assert unread.observed_tokens == round(whole.observed_tokens / 2), "only the first call's fields"


def test_a_bug_the_phase2_model_adds_says_who_can_fix_it() -> None:
    common = {"severity": "medium", "trigger": "t", "observed": "o", "expected": "e", "tool": "list_items"}
    raw = [
        {"type": "correctness", "slug": "wrong count of jars", **common},
        {"type": "description", "slug": "shelf argument unclear", **common},
        {"type": "efficiency", "slug": "lists every shelf", "fixable_by": "agent", **common},
    ]
    bugs, notes = llm_bugs(raw, set())
    assert notes == [] and [bug.fixable_by for bug in bugs] == ["agent", "server", "agent"]
