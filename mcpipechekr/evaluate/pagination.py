"""Pagination walks: paging through results to find one item that a filter or a sort would have returned."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, ClassVar

import orjson

from mcpipechekr.artifacts.trace import ToolCall
from mcpipechekr.evaluate.base import BugSighting, TraceContext, records_of, result_json
from mcpipechekr.evaluate.matching import Haystack, as_day
from mcpipechekr.evaluate.walks import _key, _specific, answer_states, held, scalars

PAGE_KEYS = (
    "offset",
    "page",
    "cursor",
    "skip",
    "start",
    "page_token",
    "next_token",
    "after",
    "starting_after",
)
"""Names that mark a paging argument outright; any other argument is recognised by how it moves."""

_MORE_KEYS = ("has_more", "hasmore", "more", "has_next", "hasnext")
_TOTAL_KEYS = ("total", "total_count", "totalcount", "count", "total_results")


def _rows(call: ToolCall) -> int:
    return len(records_of(result_json(call)))


def _sizes(call: ToolCall, key: str) -> set[int]:
    """The call's other numeric arguments above one: its page size (`limit`, `per_page`) if it has one."""
    return {
        value
        for name, value in call.arguments.items()
        if name != key and isinstance(value, int) and not isinstance(value, bool) and value > 1
    }


def _overlap(before: ToolCall, after: ToolCall) -> bool:
    """Whether `after` lists a row `before` already listed."""
    seen = {
        orjson.dumps(row, option=orjson.OPT_SORT_KEYS, default=str) for row in records_of(result_json(before))
    }
    return any(
        orjson.dumps(row, option=orjson.OPT_SORT_KEYS, default=str) in seen
        for row in records_of(result_json(after))
    )


def paging_step(before: ToolCall, after: ToolCall) -> str | None:
    """The argument that moved when `after` is the next page of `before`, else None.

    The two calls differ in one argument, which either
    - is named like a paging argument (`PAGE_KEYS`) and changed (a number that grew, a new token);
    - is a number that grew by a page's size (another numeric argument such as `limit`/`per_page`, or
      the rows the previous page listed), or by one when the calls also pass a page size or the name
      says `page` (a page number), from the previous value or from its absence (the first page), while
      the previous page listed rows; a record looked up by one number after another (`invoice_number`
      1001, 1002, ...) is not a page;
    - is a string the previous result handed out (a next-page cursor, whatever its name).
    Dates are not pages (a date that moves is the date-window analyzer's), nor is a call that lists a
    row the previous one listed (a wider `limit` over the same rows).
    """
    keys = set(before.arguments) | set(after.arguments)
    changed = [key for key in keys if before.arguments.get(key) != after.arguments.get(key)]
    if len(changed) != 1:
        return None
    key = changed[0]
    old, new = before.arguments.get(key), after.arguments.get(key)
    if isinstance(new, bool) or isinstance(old, bool) or new in (None, ""):
        return None
    named = key.lower() in PAGE_KEYS
    if _overlap(before, after):
        return None  # the same rows again: a wider or repeated listing, not the next page
    if isinstance(new, int):
        start = old if isinstance(old, int) else (0 if old is None else None)
        if start is None or new <= start:
            return None
        if named:
            return key
        if key.lower().endswith("id") or not _rows(before):
            return None
        delta, sizes = new - start, _sizes(before, key)
        if delta in sizes or (delta == _rows(before) > 1):
            return key  # an offset moved by one page
        numbered = "page" in key.lower() or bool(sizes)
        return key if numbered and (delta == 1 or (old is None and new == 2)) else None
    if isinstance(new, str):
        if as_day(new) is not None:
            return None
        if named or any(value == new for value in scalars(result_json(before))):
            return key
    return None


def has_more(call: ToolCall, key: str) -> bool | None:
    """Whether results remained after this page: None when the result does not say."""
    data = result_json(call)
    if not isinstance(data, dict):
        return None
    rows = _rows(call)
    for name, value in data.items():
        lowered = name.lower()
        if lowered in _MORE_KEYS and isinstance(value, bool):
            return value
        if "next" in lowered and not isinstance(value, list | dict):
            return bool(value)
    position = call.arguments.get(key)
    for name in _TOTAL_KEYS:
        total = data.get(name)
        if isinstance(total, int) and not isinstance(total, bool) and total > rows:
            if isinstance(position, int) and not isinstance(position, bool) and position >= 0:
                return total > position + rows
            return None
    return None


def _cursor_left(before: ToolCall, last: ToolCall, cursor: str) -> bool | None:
    """Whether the last page handed out a cursor again, in the field the one before it used."""
    data, then = result_json(last), result_json(before)
    if not isinstance(data, dict) or not isinstance(then, dict):
        return None
    field = next((name for name, value in then.items() if value == cursor), None)
    return bool(data.get(field)) if field is not None else None


@dataclass(frozen=True)
class Page:
    call: ToolCall
    value: Any


@dataclass
class PaginationWalk:
    """Flags paging through a tool's results to find one item that a filter or sort would have returned.

    Recognising a walk: consecutive calls to one tool (other tools may come in
    between) identical except one argument that advances, whatever its name
    (`paging_step`): a page number, an offset moving by a page, a cursor the
    previous result handed out. The first page may lack the argument.

    Judging it: the page that held what the task needed is *found*
    (`walks.held`: a record the final answer names, else the baseline's
    identifying values).
    - found on two or more pages: the answer uses items from several pages
      (a list-all task): not flagged;
    - found on the first page: not flagged, unless the item is the latest,
      earliest, largest or smallest of a field over every page read and the
      pages are not in that field's order (`_unordered_extreme`): nothing on
      page 1 said it was the one, so every other page had to be read to be sure;
      flagged as `GAP-no-order-to-find-<tool>`, the pages beyond the first waste;
    - found on a later page: flagged, every other page is waste;
    - found nowhere: a count-all walk (the answer states the rows read, or the
      total a page reported) or a walk that read to the end (the last page says
      nothing remained, or listed fewer rows than the first) is not flagged; a
      walk that stopped while results remained was searching (flagged, the
      pages before the last are waste); when the result does not say, a walk of
      `min_pages` pages is flagged.
    A walk the task's known minimum covers (`min_calls` at least its pages:
    the baseline itself needs every page) is not flagged, except the unordered
    extreme on page 1: there the minimum reads every page only for want of the
    order, which is the gap reported.

    Blind spots: a walk whose found page the answer and the baseline cannot
    name falls back on whether results remained, so an agent that gave up early
    looks like one that found its item; a walk with two changing arguments
    (offset and a new filter) is not recognised.
    """

    name: ClassVar[str] = "pagination"
    min_pages: int = 3

    def analyze(self, ctx: TraceContext) -> list[BugSighting]:
        sightings = []
        by_tool: dict[str, list[ToolCall]] = {}
        for call in ctx.calls:
            if not call.is_error:
                by_tool.setdefault(call.tool, []).append(call)
        for tool, calls in sorted(by_tool.items()):
            for key, chain in self._chains(calls):
                wasted = self._wasted(ctx, key, chain)
                if wasted:
                    sightings.append(self._sighting(tool, key, chain, wasted))
        return sightings

    def _chains(self, calls: list[ToolCall]) -> list[tuple[str, list[Page]]]:
        chains: list[tuple[str, list[Page]]] = []
        chain: list[Page] = []
        key: str | None = None
        for call in calls:
            step = paging_step(chain[-1].call, call) if chain else None
            if step is not None and (key is None or step == key):
                key = step
                chain.append(Page(call, call.arguments.get(step)))
                continue
            if key is not None and len(chain) >= 2:
                chains.append((key, chain))
            chain, key = [Page(call, None)], None
        if key is not None and len(chain) >= 2:
            chains.append((key, chain))
        for found_key, pages in chains:
            pages[0] = Page(pages[0].call, pages[0].call.arguments.get(found_key))
        return chains

    def _wasted(self, ctx: TraceContext, key: str, chain: list[Page]) -> tuple[int, ...] | None:
        """Positions of the wasted pages, or None when the walk is no waste."""
        holding = held(ctx, [page.call for page in chain])
        if holding.positions == (0,) and _unordered_extreme(ctx, chain):
            # Even the known minimum reads every page here, for want of the order: that is the gap.
            return tuple(range(1, len(chain)))
        if ctx.min_calls is not None and ctx.min_calls >= len(chain):
            return None
        if len(holding.positions) >= 2:
            return None
        if holding.positions:
            position = holding.positions[0]
            if position == 0:
                return None
            return tuple(index for index in range(len(chain)) if index != position)
        rows = sum(_rows(page.call) for page in chain)
        totals = {
            value
            for page in chain
            if isinstance(data := result_json(page.call), dict)
            for name, value in data.items()
            if name.lower() in _TOTAL_KEYS and isinstance(value, int) and not isinstance(value, bool)
        }
        if any(answer_states(ctx, number) for number in {rows, *totals} if number > 0):
            return None
        last = chain[-1].call
        more = has_more(last, key)
        if more is None and isinstance(chain[-1].value, str) and len(chain) >= 2:
            more = _cursor_left(chain[-2].call, last, chain[-1].value)
        if more is None and _rows(last) < _rows(chain[0].call):
            more = False
        if more is None:
            more = True if len(chain) >= self.min_pages else None
        return tuple(range(len(chain) - 1)) if more else None

    def _sighting(self, tool: str, key: str, chain: list[Page], wasted: tuple[int, ...]) -> BugSighting:
        values = [page.value if page.value is not None else "(first page)" for page in chain]
        found = next((index for index in range(len(chain)) if index not in wasted), len(chain) - 1)
        pages = f"({key}: {', '.join(map(str, values))})"
        if found == 0:  # on page 1, but only every page could tell it was the one (`_unordered_extreme`)
            slug, trigger = (
                "no-order-to-find",
                f"looking for the latest, earliest, largest or smallest of `{tool}`'s results",
            )
            observed = (
                f"the item the agent used was on page 1 of `{tool}`, but the results were not in the order "
                f"asked for: it read all {len(chain)} pages {pages} to be sure"
            )
            expected = f"`{tool}` returns its results in the order asked for, so page 1 is enough"
            criterion = f"{tool} offers a sort order (or a filter) that puts the wanted item first"
        else:
            slug, trigger = "paging-to-find", f"looking for one item in `{tool}`'s results"
            observed = (
                f"the agent paged through {len(chain)} pages of `{tool}` {pages} to use one item of page "
                f"{found + 1}"
            )
            expected = f"the item on `{tool}`'s first page, through a filter or an ordering"
            criterion = f"{tool} offers a filter or sort order that puts the wanted item on the first page"
        return BugSighting(
            type="feature_gap",
            slug=(slug, tool),
            severity="high" if len(wasted) >= 4 else "medium",
            tool=tool,
            trigger=trigger,
            observed=observed,
            expected=expected,
            acceptance_criteria=[criterion, f"an agent finds the item with one `{tool}` call"],
            steps=[page.call.index for page in chain],
            wasted=[chain[index].call.index for index in wasted],
            details={
                "paging_argument": key,
                "pages": [str(value) for value in values],
                "found_step": chain[found].call.index,
            },
        )


def _unordered_extreme(ctx: TraceContext, chain: list[Page]) -> bool:
    """Whether the one first-page record the answer names is the unique highest or lowest value of
    a field (a date, a number) over every page read, while the pages list that field out of order:
    only reading them all could tell it was the one. A record is named by a value of its own that the
    answer mentions: a value other records of the pages share (their room, their team) names none."""
    answer = ctx.trace.final_answer
    if not answer or not asks_for_an_extreme(ctx.trace.prompt):
        return False
    said = Haystack([answer])
    every = [record for page in chain for record in records_of(result_json(page.call))]
    # A value several records share (their room, their team) does not single one out.
    shared = Counter(key for record in every for key in {_key(value) for value in record.values()})
    first = records_of(result_json(chain[0].call))
    used = [
        record
        for record in first
        if any(
            _specific(value) and shared[_key(value)] == 1 and said.contains(value)
            for value in record.values()
        )
    ]
    if len(used) != 1:
        return False
    for field in used[0]:
        keys = [_order_key(record.get(field)) for record in every]
        if any(key is None for key in keys) or len(keys) < 3:
            continue
        mine = _order_key(used[0][field])
        for best in (max(keys), min(keys)):  # type: ignore[type-var]
            if (
                mine == best
                and keys.count(best) == 1
                and keys != sorted(keys)
                and keys != sorted(keys, reverse=True)
            ):  # type: ignore[type-var]
                return True
    return False


_SUPERLATIVE = re.compile(r"\b(?:[a-z]{2,}est|most|least|maximum|minimum|max|min)\b", re.I)
_NOT_SUPERLATIVE = frozenset(
    "test request interest forest guest west nest chest contest protest suggest digest honest modest "
    "manifest harvest invest arrest quest rest pest vest zest crest jest inquest conquest behest "
    "earnest priest".split()
)


def asks_for_an_extreme(prompt: str) -> bool:
    """Whether a request asks for the latest, largest, cheapest, most … of something: English
    superlatives, not the server's words."""
    return any(word.lower() not in _NOT_SUPERLATIVE for word in _SUPERLATIVE.findall(prompt or ""))


def _order_key(value: Any) -> tuple[int, Any] | None:
    """A value's place in an order: a number, or an ISO date or date-time; else None."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (0, float(value))
    if isinstance(value, str) and as_day(value) is not None:
        return (1, value.strip())
    return None
