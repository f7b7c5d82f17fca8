"""Date-window and page walks on servers other than the bundled example: found is what the task needed.

Three made-up servers, none sharing names or data with the bundled example:
a ticket tracker (`list_tickets(project, since, until)`, `count_tickets`), a shop
(`search_orders(customer, start_date, end_date)`, `count_orders`), and listings paged
by `page_number`/`per_page`, `offset`/`limit` or a cursor the previous page hands out.
"""

from __future__ import annotations

from trace_builder import call, ctx_of, make_trace

from mcpipechekr.artifacts.baseline import BaselineEntry
from mcpipechekr.evaluate.date_windows import DateWindows
from mcpipechekr.evaluate.pagination import PaginationWalk
from mcpipechekr.tasks import Task

MONTHS = [("2024-01-01", "2024-01-31"), ("2024-02-01", "2024-02-29"), ("2024-03-01", "2024-03-31")]


def tickets(month: int, label: str = "ops") -> dict:
    """A month of the tracker's tickets: a dozen rows, labelled `label` unless one is planted."""
    return {
        "tickets": [
            {
                "ticket_id": f"TCK-{month}{n:02d}",
                "title": f"Routine {label} chore {month}-{n}",
                "opened_at": f"2024-{month:02d}-{n + 1:02d}T08:00:00Z",
                "label": label,
            }
            for n in range(12)
        ]
    }


def planted(month: int, ticket_id: str, title: str, day: int) -> dict:
    rows = tickets(month)
    rows["tickets"][5] = {
        "ticket_id": ticket_id,
        "title": title,
        "opened_at": f"2024-{month:02d}-{day:02d}T10:30:00Z",
        "label": "billing",
    }
    return rows


def month_walk(results: list[dict], answer: str):
    steps = [
        call("list_tickets", {"project": "atlas", "since": since, "until": until}, result)
        for (since, until), result in zip(MONTHS, results, strict=True)
    ]
    return make_trace("first-billing", steps, answer=answer)


# --- date windows -------------------------------------------------------------------------------


def test_month_walk_past_full_windows_is_flagged_with_the_earlier_windows_as_waste() -> None:
    results = [tickets(1), tickets(2), planted(3, "TCK-7731", "Refund not applied to invoice", 14)]
    trace = month_walk(results, "The first billing ticket is TCK-7731, 'Refund not applied to invoice'.")
    [sighting] = DateWindows().analyze(ctx_of(trace))
    assert sighting.id == "GAP-no-date-sort-list-tickets" and sighting.tool == "list_tickets"
    assert sighting.steps == [0, 1, 2] and sighting.wasted == [0, 1]
    assert sighting.details["found_step"] == 2 and sighting.details["found_by"] == "answer"
    assert [window["found"] for window in sighting.details["windows"]] == [12, 12, 12]


def test_two_full_windows_before_the_answer_are_a_walk_too() -> None:
    """Two windows, the first with rows but not the wanted one: the old empty-window rule missed it."""
    steps = [
        call(
            "search_orders",
            {"customer": "c-88", "start_date": "2023-07-01", "end_date": "2023-09-30"},
            {"orders": [{"order_no": f"SO-{n}", "placed": f"2023-08-{n:02d}"} for n in range(10, 30)]},
        ),
        call(
            "search_orders",
            {"customer": "c-88", "start_date": "2023-10-01", "end_date": "2023-12-31"},
            {"orders": [{"order_no": "SO-9001", "placed": "2023-11-02", "item": "kayak"}]},
        ),
    ]
    trace = make_trace("kayak-order", steps, answer="The kayak was order SO-9001.")
    [sighting] = DateWindows().analyze(ctx_of(trace))
    assert sighting.tool == "search_orders" and sighting.wasted == [0]


def test_the_baseline_names_the_window_when_the_answer_does_not() -> None:
    results = [tickets(1), planted(2, "TCK-5120", "Card declined twice at checkout", 20), tickets(3)]
    trace = month_walk(results, "I found it.")
    entry = BaselineEntry(
        task_id="first-billing",
        result={"ticket_id": "TCK-5120", "title": "Card declined twice at checkout"},
        plausibility_score=0.9,
        evaluator="rules",
        timestamp="2026-12-01T09:00:00Z",
    )
    [sighting] = DateWindows().analyze(ctx_of(trace, baseline=entry))
    assert sighting.details["found_by"] == "baseline" and sighting.details["found_step"] == 1
    assert sighting.wasted == [0, 2]


def test_a_walk_whose_first_window_held_the_answer_is_not_waste() -> None:
    results = [planted(1, "TCK-1404", "Duplicate charge on renewal", 9), tickets(2), tickets(3)]
    trace = month_walk(results, "The first one is TCK-1404, opened on January 9, 2024.")
    assert DateWindows().analyze(ctx_of(trace)) == []


def test_a_read_all_walk_whose_answer_draws_on_every_window_is_not_flagged() -> None:
    results = [
        planted(1, "TCK-1404", "Duplicate charge on renewal", 9),
        planted(2, "TCK-5120", "Card declined twice at checkout", 20),
        planted(3, "TCK-7731", "Refund not applied to invoice", 14),
    ]
    answer = "Billing tickets in Q1: TCK-1404 (Jan 9), TCK-5120 (Feb 20) and TCK-7731 (Mar 14)."
    assert DateWindows().analyze(ctx_of(month_walk(results, answer))) == []


def test_counting_every_month_to_add_them_up_is_not_flagged() -> None:
    counts = [41, 37, 52]
    steps = [
        call("count_orders", {"region": "north", "start_date": start, "end_date": end}, {"count": n})
        for (start, end), n in zip(MONTHS, counts, strict=True)
    ]
    summed = make_trace("q1-orders", steps, answer="The north region placed 130 orders in Q1 2024.")
    assert DateWindows().analyze(ctx_of(summed)) == []
    searched = make_trace("first-order", steps, answer="The first orders came in January.")
    [sighting] = DateWindows().analyze(ctx_of(searched))
    assert sighting.details["found_by"] == "last window" and sighting.wasted == [0, 1]


def test_a_text_result_is_found_by_the_answers_own_dates() -> None:
    steps = []
    for (since, until), lines in zip(
        MONTHS,
        [["2024-01-03 deploy ok", "2024-01-19 deploy ok"], ["2024-02-07 deploy ok"], ["2024-03-11 rollback"]],
        strict=True,
    ):
        steps.append(call("read_log", {"service": "api", "since": since, "until": until}, "; ".join(lines)))
    trace = make_trace("first-rollback", steps, answer="The first rollback was on 2024-03-11.")
    [sighting] = DateWindows().analyze(ctx_of(trace))
    assert sighting.wasted == [0, 1] and sighting.details["found_by"] == "answer"


# --- pagination ---------------------------------------------------------------------------------


def recipes(page: int, per_page: int = 5, *, last: int = 4) -> dict:
    return {
        "recipes": [
            {"slug": f"dish-{page}-{n}", "name": f"Everyday stew {page}.{n}", "minutes": 40 + n}
            for n in range(per_page)
        ],
        "has_more": page < last,
    }


def browse(pages: list[dict]) -> list[dict]:
    steps = [call("browse_recipes", {"diet": "vegan", "per_page": 5}, pages[0])]
    steps += [
        call("browse_recipes", {"diet": "vegan", "per_page": 5, "page_number": number}, result)
        for number, result in enumerate(pages[1:], start=2)
    ]
    return steps


def test_paging_to_find_one_item_is_a_missing_filter_on_the_paged_tool() -> None:
    third = recipes(3)
    third["recipes"][2] = {"slug": "miso-soup", "name": "Ten-minute miso soup", "minutes": 10}
    trace = make_trace(
        "quick-vegan", browse([recipes(1), recipes(2), third]), answer="Try the Ten-minute miso soup."
    )
    [sighting] = PaginationWalk().analyze(ctx_of(trace))
    assert sighting.id == "GAP-paging-to-find-browse-recipes" and sighting.type == "feature_gap"
    assert sighting.details["paging_argument"] == "page_number"
    assert sighting.steps == [0, 1, 2] and sighting.wasted == [0, 1]


def test_reading_to_the_end_for_one_item_wastes_every_other_page() -> None:
    second = recipes(2, last=3)
    second["recipes"][0] = {"slug": "miso-soup", "name": "Ten-minute miso soup", "minutes": 10}
    pages = [recipes(1, last=3), second, recipes(3, last=3)]
    trace = make_trace("quickest", browse(pages), answer="The quickest is the Ten-minute miso soup.")
    [sighting] = PaginationWalk().analyze(ctx_of(trace))
    assert sighting.wasted == [0, 2] and sighting.details["found_step"] == 1


def test_a_cursor_handed_out_by_the_previous_page_is_followed_whatever_its_name() -> None:
    def feed(marker: str | None, rows: list[dict]) -> dict:
        return {"entries": rows, "continue_from": marker}

    first = feed("k7Qz", [{"entry_id": f"e{n}", "headline": f"Weekly digest {n}"} for n in range(30, 40)])
    second = feed("p2Xa", [{"entry_id": f"e{n}", "headline": f"Weekly digest {n}"} for n in range(40, 50)])
    third = feed("w9Lm", [{"entry_id": "e77", "headline": "Outage post-mortem for the eu-west region"}])
    steps = [
        call("read_feed", {"channel": "status"}, first),
        call("read_feed", {"channel": "status", "continuation": "k7Qz"}, second),
        call("read_feed", {"channel": "status", "continuation": "p2Xa"}, third),
    ]
    trace = make_trace("postmortem", steps, answer="See 'Outage post-mortem for the eu-west region'.")
    [sighting] = PaginationWalk().analyze(ctx_of(trace))
    assert sighting.tool == "read_feed" and sighting.details["paging_argument"] == "continuation"
    assert sighting.wasted == [0, 1]


def test_paging_to_count_everything_is_not_flagged() -> None:
    def events(offset: int, n: int) -> dict:
        rows = [{"event_ref": f"EV-{offset + i:04d}", "kind": "login"} for i in range(n)]
        return {"items": rows, "total": 23}

    steps = [
        call("list_events", {"user": "kim", "limit": 10}, events(0, 10)),
        call("list_events", {"user": "kim", "limit": 10, "offset": 10}, events(10, 10)),
        call("list_events", {"user": "kim", "limit": 10, "offset": 20}, events(20, 3)),
    ]
    trace = make_trace("count-logins", steps, answer="Kim logged in 23 times.")
    assert PaginationWalk().analyze(ctx_of(trace)) == []
    stopped = make_trace("find-login", steps[:2], answer="done")
    [sighting] = PaginationWalk().analyze(ctx_of(stopped))
    assert sighting.wasted == [0], "stopped with 13 rows left: it was searching"


def test_a_list_all_walk_whose_answer_uses_several_pages_is_not_flagged() -> None:
    pages = [recipes(1, last=3), recipes(2, last=3), recipes(3, last=3)]
    answer = "Vegan stews: Everyday stew 1.0, Everyday stew 2.3 and Everyday stew 3.4, among others."
    assert PaginationWalk().analyze(ctx_of(make_trace("all-stews", browse(pages), answer=answer))) == []


def test_a_walk_whose_first_page_held_the_item_or_the_baseline_needs_is_not_flagged() -> None:
    first = recipes(1)
    first["recipes"][1] = {"slug": "miso-soup", "name": "Ten-minute miso soup", "minutes": 10}
    steps = browse([first, recipes(2), recipes(3)])
    assert PaginationWalk().analyze(ctx_of(make_trace("t", steps, answer="Ten-minute miso soup"))) == []
    every_page = Task(task_id="t", prompt="p", task_type="deterministic", min_calls=3)
    trace = make_trace("t", browse([recipes(1), recipes(2), recipes(3)]), answer="done")
    assert PaginationWalk().analyze(ctx_of(trace, every_page)) == []


def events(page: int, dates: list[str], *, last: int = 3) -> dict:
    rows = [
        {"event_id": f"ev-{page}-{n}", "title": f"Harbour meeting {page}.{n}", "day": day}
        for n, day in enumerate(dates)
    ]
    return {"events": rows, "has_more": page < last}


def event_walk(pages: list[dict], prompt: str, answer: str) -> list:
    steps = [call("list_events", {"team": "harbour"}, pages[0])]
    steps += [
        call("list_events", {"team": "harbour", "page": n}, page) for n, page in enumerate(pages[1:], start=2)
    ]
    trace = make_trace("latest-meeting", steps, answer=answer)
    return PaginationWalk().analyze(ctx_of(trace.model_copy(update={"prompt": prompt})))


def test_the_latest_item_on_page_one_of_an_unordered_listing_needed_every_page() -> None:
    """The answer was on page 1, but nothing there said it was the latest: the agent had to read
    the other pages to be sure, which a sort order would have spared."""
    pages = [
        events(1, ["2026-03-02", "2026-05-30", "2026-01-11"]),
        events(2, ["2026-04-18", "2026-02-07", "2026-03-21"]),
        events(3, ["2026-01-29", "2026-05-02"]),
    ]
    [sighting] = event_walk(
        pages, "When was the team's latest meeting?", "The latest was Harbour meeting 1.1."
    )
    assert sighting.id == "GAP-no-order-to-find-list-events" and sighting.type == "feature_gap"
    assert sighting.wasted == [1, 2] and sighting.details["found_step"] == 0
    assert "to be sure" in sighting.observed


def test_the_unordered_extreme_is_flagged_even_when_the_minimum_reads_every_page() -> None:
    """Without an order, even the task's known minimum reads every page to be sure: the guard that
    spares walks the minimum covers does not excuse the missing order it is the cost of."""
    pages = [
        events(1, ["2026-03-02", "2026-05-30", "2026-01-11"]),
        events(2, ["2026-04-18", "2026-02-07", "2026-03-21"]),
        events(3, ["2026-01-29", "2026-05-02"]),
    ]
    steps = [call("list_events", {"team": "harbour"}, pages[0])]
    steps += [call("list_events", {"team": "harbour", "page": n}, pages[n - 1]) for n in (2, 3)]
    trace = make_trace("latest-meeting", steps, answer="The latest was Harbour meeting 1.1.")
    trace = trace.model_copy(update={"prompt": "When was the team's latest meeting?"})
    every_page = Task(task_id="latest-meeting", prompt="p", task_type="deterministic", min_calls=3)
    [sighting] = PaginationWalk().analyze(ctx_of(trace, every_page))
    assert sighting.id == "GAP-no-order-to-find-list-events" and sighting.wasted == [1, 2]
    named = trace.model_copy(update={"prompt": "When was Harbour meeting 1.1 held?"})
    assert PaginationWalk().analyze(ctx_of(named, every_page)) == []


def test_a_value_other_rows_share_does_not_hide_which_row_the_answer_names() -> None:
    """The answer names the newest item and its room; the room is every page-1 row's, so the item's
    own name is what singles it out."""

    def gear(page: int, rows: list[tuple[str, str, str]]) -> dict:
        return {
            "page": page,
            "pages": 3,
            "equipment": [{"item": item, "room": room, "bought": day} for item, room, day in rows],
        }

    pages = [
        gear(1, [("Screen", "Orion", "2024-08-08"), ("Video bar", "Orion", "2026-05-18"),
                 ("Webcam", "Orion", "2022-05-12")]),
        gear(2, [("Projector", "Vega", "2023-09-06"), ("Flip chart", "Vega", "2025-01-02")]),
        gear(3, [("Speaker", "Lyra", "2024-12-08"), ("Whiteboard", "Lyra", "2026-01-19")]),
    ]  # fmt: skip
    steps = [call("list_equipment", {"page": n}, page) for n, page in enumerate(pages, start=1)]
    trace = make_trace("newest", steps, answer="Orion's Video bar, bought on 2026-05-18.")
    trace = trace.model_copy(update={"prompt": "Which item was bought most recently?"})
    [sighting] = PaginationWalk().analyze(ctx_of(trace))
    assert sighting.id == "GAP-no-order-to-find-list-equipment" and sighting.wasted == [1, 2]


def test_page_one_of_an_ordered_listing_or_a_plain_lookup_is_not_flagged() -> None:
    """Newest first: page 1 said so, the other pages were the agent's own waste. A request for one
    named item is no extreme, whatever its date."""
    ordered = [
        events(1, ["2026-05-30", "2026-05-02", "2026-04-18"]),
        events(2, ["2026-03-21", "2026-03-02", "2026-02-07"]),
        events(3, ["2026-01-29", "2026-01-11"]),
    ]
    assert event_walk(ordered, "When was the team's latest meeting?", "Harbour meeting 1.0.") == []
    unordered = [
        events(1, ["2026-03-02", "2026-05-30", "2026-01-11"]),
        events(2, ["2026-04-18", "2026-02-07", "2026-03-21"]),
        events(3, ["2026-01-29", "2026-05-02"]),
    ]
    assert (
        event_walk(unordered, "When was Harbour meeting 1.1 held? Check the request.", "Harbour meeting 1.1.")
        == []
    )


def test_reading_records_one_id_after_another_is_not_paging() -> None:
    steps = [
        call("get_invoice", {"invoice_number": n}, {"invoice_number": n, "lines": [{"sku": "A-1"}]})
        for n in (1001, 1002, 1003, 1004)
    ]
    assert PaginationWalk().analyze(ctx_of(make_trace("t", steps, answer="done"))) == []


def test_asking_again_with_a_wider_limit_is_not_paging() -> None:
    def rows(n: int) -> dict:
        return {"items": [{"event_ref": f"EV-{i:04d}", "kind": "login"} for i in range(n)]}

    steps = [
        call("list_events", {"user": "kim", "max_rows": 10}, rows(10)),
        call("list_events", {"user": "kim", "max_rows": 20}, rows(20)),
        call("list_events", {"user": "kim", "max_rows": 30}, rows(30)),
    ]
    assert PaginationWalk().analyze(ctx_of(make_trace("t", steps, answer="EV-0025"))) == []
