"""Pricing the model turns around wasted calls, on hand-written traces with known usage."""

from __future__ import annotations

from trace_builder import call, ctx_of, make_trace, say

from mcpipechekr._util.tokens import estimate_tokens
from mcpipechekr.artifacts.trace import ModelTurn, Usage
from mcpipechekr.evaluate.base import BugSighting, call_cost
from mcpipechekr.evaluate.call_count import CallCount
from mcpipechekr.evaluate.costing import price, turn_tokens
from mcpipechekr.evaluate.date_windows import DateWindows
from mcpipechekr.evaluate.turns import read_tokens, requests_of
from mcpipechekr.tasks import Task

OUT = 10  # trace_builder's `say(..., tokens=N)`: N input tokens reported, 10 output


def sighting(steps: list[int], wasted: list[int], **fields) -> BugSighting:
    return BugSighting(
        type="bug",
        slug=("x",),
        severity="low",
        trigger="t",
        observed="o",
        expected="e",
        acceptance_criteria=[],
        steps=steps,
        wasted=wasted,
        **fields,
    )


def count(year: int, found: int) -> dict:
    return call(
        "count_emails",
        {"keywords": "ron", "date_from": f"{year}-01-01", "date_to": f"{year}-12-31"},
        {"count": found},
    )


def test_a_wasted_round_trip_costs_its_output_the_next_request_and_every_later_re_read() -> None:
    trace = make_trace(
        "t",
        [
            say("first", tokens=100),
            call("count_emails", {"keywords": "ron"}, {"count": 0}),
            say("again", tokens=300),
            call("count_emails", {"keywords": "ron chinn"}, {"count": 2}),
            say("done", tokens=500),
            say("really done", tokens=700),
        ],
    )
    ctx = ctx_of(trace)
    wasted, needed = trace.steps[1], trace.steps[3]
    # the turn that issued it (10 out), the request that read it (300 in), and the two later
    # requests re-reading that output and the call
    expected = OUT + 300 + 2 * (OUT + call_cost(wasted))
    assert turn_tokens(sighting([1, 3], [1]), ctx) == expected
    cost = price(sighting([1, 3], [1]), ctx)
    assert cost.optimal == call_cost(needed)
    assert cost.gap == call_cost(wasted) + expected
    assert turn_tokens(sighting([1, 3], []), ctx) == 0, "nothing wasted, no turns priced"


def test_a_wasted_call_issued_beside_a_needed_one_adds_no_round_trip() -> None:
    trace = make_trace(
        "t",
        [
            say("both at once", tokens=100),
            call("count_emails", {"keywords": "ron"}, {"count": 0}),
            call("count_emails", {"keywords": "ron chinn"}, {"count": 2}),
            say("one more", tokens=400),
            call("get_email", {"email_id": 7}, {"id": 7}),
            say("done", tokens=600),
        ],
    )
    ctx = ctx_of(trace)
    assert [request.calls for request in ctx.requests] == [(1, 2), (4,), ()]
    # the request at step 3 happens anyway and reads it once (the call's own price); step 5 re-reads it
    assert turn_tokens(sighting([1, 2], [1]), ctx) == call_cost(trace.steps[1])
    both = OUT + 400 + 1 * (OUT + call_cost(trace.steps[1]) + call_cost(trace.steps[2]))
    assert turn_tokens(sighting([1, 2], [1, 2]), ctx) == both


def test_consecutive_wasted_rounds_count_each_removed_request_once() -> None:
    trace = make_trace(
        "t",
        [
            say("2011", tokens=100),
            count(2011, 0),
            say("2012", tokens=200),
            count(2012, 0),
            say("2013", tokens=300),
            count(2013, 2),
            say("answer", tokens=400),
        ],
    )
    ctx = ctx_of(trace)
    [walk] = DateWindows().analyze(ctx)
    assert walk.wasted == [1, 3]
    calls = {i: call_cost(trace.steps[i]) for i in (1, 3, 5)}
    # two round trips (outputs of steps 0 and 2, inputs of steps 2 and 4); the request at step 4
    # re-read both rounds within its input already, so only the answer at step 6 re-reads them
    expected = 2 * OUT + 200 + 300 + (OUT + calls[1]) + (OUT + calls[3])
    assert turn_tokens(walk, ctx) == expected
    assert price(walk, ctx).gap == calls[1] + calls[3] + expected


def test_unreported_input_is_estimated_from_the_conversation_so_far() -> None:
    trace = make_trace(
        "t",
        [
            say("let me look"),
            call("count_emails", {"keywords": "ron"}, {"count": 0}),
            say("try the full name"),
            call("count_emails", {"keywords": "ron chinn"}, {"count": 2}),
            say("two emails"),
        ],
    )
    first, wasted, second = trace.steps[0], trace.steps[1], trace.steps[2]
    assert isinstance(first, ModelTurn) and first.usage.input_tokens == 0  # the runner reported none
    ctx = ctx_of(trace)
    conversation = estimate_tokens(trace.prompt) + first.usage.output_tokens + wasted.result_tokens_estimated
    assert ctx.requests[1].input_tokens == conversation
    expected = first.usage.output_tokens + conversation + (first.usage.output_tokens + call_cost(wasted))
    assert turn_tokens(sighting([1, 3], [1]), ctx) == expected
    assert second.usage.source == "estimated"


def test_a_trace_without_model_turns_gets_a_request_per_call_and_one_for_the_answer() -> None:
    trace = make_trace(
        "t",
        [
            call("count_emails", {"keywords": "ron"}, {"count": 0}),
            call("count_emails", {"keywords": "ron chinn"}, {"count": 2}),
        ],
        answer="two",
    )
    ctx = ctx_of(trace)
    prompt = estimate_tokens(trace.prompt)
    first = call_cost(trace.steps[0])
    assert [(r.input_tokens, r.output_tokens, r.calls) for r in ctx.requests] == [
        (prompt, 0, (0,)),
        (prompt + first, 0, (1,)),
        (prompt + first + call_cost(trace.steps[1]), 0, ()),
    ]
    assert turn_tokens(sighting([0, 1], [0]), ctx) == (prompt + first) + first
    unanswered = make_trace("t", [call("count_emails", {"keywords": "ron"}, {"count": 0})], answer=None)
    assert [r.calls for r in requests_of(unanswered)] == [(0,)], "no answer: nobody read the last result"


def test_cached_prompt_tokens_count_whichever_way_the_provider_reports_them() -> None:
    inside = Usage(input_tokens=1200, output_tokens=5, cache_read_tokens=1000, source="reported")
    apart = Usage(input_tokens=200, output_tokens=5, cache_read_tokens=1000, source="reported")
    assert read_tokens(inside) == 1200 and read_tokens(apart) == 1200
    written = Usage(input_tokens=3, output_tokens=5, cache_write_tokens=900, source="reported")
    assert read_tokens(written) == 903


def test_call_count_prices_the_turns_of_its_extra_calls_only() -> None:
    steps = []
    for i in range(6):
        steps += [
            say(f"call {i}", tokens=100 * (i + 1)),
            call("count_emails", {"keywords": f"w{i}"}, {"count": i}),
        ]
    ctx = ctx_of(
        make_trace("t", [*steps, say("done", tokens=700)]),
        Task(task_id="t", prompt="p", task_type="deterministic", min_calls=2),
    )
    [found] = CallCount().analyze(ctx)
    assert found.extra_calls == 4 and len(found.wasted) == 6
    every = turn_tokens(sighting(found.steps, found.wasted), ctx)
    assert turn_tokens(found, ctx) == round(every * 4 / 6) > 0


def test_a_date_walk_outweighs_a_bigger_one_off_result_once_its_round_trips_count() -> None:
    """The brief's case: four windows walked because there is no sort, against one fat result."""
    walk = [say("plan", tokens=2000)]
    for year in (2010, 2011, 2012, 2013):
        walk += [count(year, 0 if year < 2013 else 3), say(f"after {year}", tokens=2000)]
    ctx = ctx_of(make_trace("t", walk))
    [found] = DateWindows().analyze(ctx)
    calls_only = sum(call_cost(ctx.trace.steps[i]) for i in found.wasted)
    cost = price(found, ctx)
    assert cost.gap > 3 * 2000 > 10 * calls_only, "three extra requests re-reading the conversation"


def test_requests_the_trace_does_not_record_are_estimated() -> None:
    trace = make_trace(
        "t",
        [
            call("query_email_database", {"fields": ["subject"]}, error="no such column: fts.rank"),
            say("without fields then", tokens=300),
            call("query_email_database", {}, {"emails": [{"subject": "Office move"}]}),
        ],
        answer="Office move",
    )
    failed, listed = trace.steps[0], trace.steps[2]
    prompt = estimate_tokens(trace.prompt)
    assert [(r.step, r.input_tokens, r.output_tokens, r.calls) for r in requests_of(trace)] == [
        (None, prompt, 0, (0,)),
        (1, 300, OUT, (2,)),
        (None, prompt + call_cost(failed) + OUT + listed.result_tokens_estimated, 0, ()),
    ]
    assert turn_tokens(sighting([0, 2], [0]), ctx_of(trace)) == 300 + call_cost(failed)
