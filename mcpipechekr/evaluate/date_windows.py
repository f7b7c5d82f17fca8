"""Date-window iteration: walking a date range forward or backward because results cannot be sorted."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any, ClassVar

import orjson

from mcpipechekr.artifacts.trace import ToolCall
from mcpipechekr.evaluate.base import BugSighting, TraceContext, records_of, result_is_empty, result_json
from mcpipechekr.evaluate.matching import as_day
from mcpipechekr.evaluate.walks import answer_states, held

_LOWER = ("from", "start", "after", "since", "begin", "min", "gte", "gt")
_UPPER = ("to", "end", "before", "until", "max", "lte", "lt")


def _bound(key: str) -> str:
    """`date_from` -> lower, `end_date` -> upper, `day` -> exact (both bounds)."""
    parts = key.lower().replace("-", "_").split("_")
    if any(part in _LOWER for part in parts):
        return "lower"
    if any(part in _UPPER for part in parts):
        return "upper"
    return "exact"


@dataclass(frozen=True)
class Window:
    step: int
    lower: date | None
    upper: date | None
    found: int | None
    empty: bool

    def label(self) -> str:
        lower = self.lower.isoformat() if self.lower else "…"
        upper = self.upper.isoformat() if self.upper else "…"
        return f"{lower}..{upper}"


def split_dates(arguments: dict[str, Any]) -> tuple[dict[str, Any], dict[str, date]]:
    """(the arguments that are not dates, the date arguments as days)."""
    rest: dict[str, Any] = {}
    dates: dict[str, date] = {}
    for key, value in arguments.items():
        day = as_day(value) if isinstance(value, str) else None
        if day is None:
            rest[key] = value
        else:
            dates[key] = date.fromisoformat(day)
    return rest, dates


def _found(call: ToolCall) -> int | None:
    data = result_json(call)
    if isinstance(data, dict):
        for key in ("count", "total", "total_count"):
            value = data.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    records = records_of(data)
    return len(records) if records or isinstance(data, list | dict) else None


def window_of(call: ToolCall, dates: dict[str, date]) -> Window:
    lowers = [day for key, day in dates.items() if _bound(key) in ("lower", "exact")]
    uppers = [day for key, day in dates.items() if _bound(key) in ("upper", "exact")]
    return Window(
        step=call.index,
        lower=max(lowers) if lowers else None,
        upper=min(uppers) if uppers else None,
        found=_found(call),
        empty=result_is_empty(call),
    )


def _lister(ctx: TraceContext, walked: str, chain: list[Window]) -> ToolCall | None:
    """The call that listed the walk's last window with another tool, when the walked tool only counts.

    A walk with a counting tool (no records in its results) followed by a listing tool over the same
    filters and the last window is one search: the sort order is missing on the listing tool.
    """
    walk_calls = [call for call in ctx.calls if call.index in {window.step for window in chain}]
    if any(records_of(result_json(call)) for call in walk_calls):
        return None
    rest, dates = split_dates(walk_calls[-1].arguments)
    for call in ctx.calls:
        if call.index <= chain[-1].step or call.tool == walked or call.is_error:
            continue
        other_rest, other_dates = split_dates(call.arguments)
        if other_dates == dates and all(other_rest.get(key) == value for key, value in rest.items()):
            return call
    return None


def _gap(later: date | None, earlier: date | None) -> int | None:
    return None if later is None or earlier is None else (later - earlier).days


@dataclass(frozen=True)
class Found:
    """Where a walk found what the task needed (a position in the walk), how that is known, and the waste."""

    position: int | None
    by: str
    wasted: tuple[int, ...]


@dataclass
class DateWindows:
    """Flags a walk through adjacent date windows that passed windows not holding what the task needed.

    Recognising a walk: calls to one tool whose other arguments are identical
    and whose date arguments (any argument whose value is a YYYY-MM-DD date or
    ISO date-time, whatever its name; names with `from/start/after/since/min`
    are lower bounds, `to/end/before/until/max` upper bounds, other names both)
    form adjacent windows moving one way: forward, each window starting on or
    the day after the previous one ended; backward, each ending on or the day
    before the previous one started. Calls to other tools may come in between.

    Judging it: the window that held what the task needed is *found*
    (`walks.held`: a record of it that the final answer names, else the
    baseline's identifying values in it), whatever the row counts of the others.
    - found in the first window: no walk waste;
    - found in two or more windows: the answer draws on all of them (a
      read-to-the-end walk, "list everything in 2024"): not flagged;
    - found in a later window: flagged; every other window is waste, rows or no
      rows, because one call sorted by date would have returned it.
    When no window can be said to hold the task's values (a tool that only
    counts, an answer that names nothing), the last window is taken as the one
    the agent stopped at: the walk is flagged when it has `min_windows`
    windows, or when a window before the last found nothing (a search, not a
    comparison), unless the answer states the sum of the windows' counts (an
    aggregate). When the walked tool only counts and a later call to another
    tool lists the last window with the same filters, that listing tool is where
    the sort order is missing: the sighting names it and every window is waste.

    Blind spots: in `details.walked_tool` and the observation only, the walk's
    tool when a listing tool is named; comparing periods on purpose, with an
    answer that names one item, looks like a walk; a walk that widens one
    window, or jumps (2012, then 2015), is not recognised; a walk done by paging
    is the pagination analyzer's.
    """

    name: ClassVar[str] = "date_windows"
    min_windows: int = 3
    max_gap_days: int = 1

    def _continues(self, chain: list[Window], window: Window, direction: str | None) -> str | None:
        prev = chain[-1]
        forward = _gap(window.lower, prev.upper)
        backward = _gap(prev.lower, window.upper)
        if direction in (None, "forward") and forward is not None and 0 <= forward <= self.max_gap_days:
            if prev.lower is None or (window.lower is not None and window.lower > prev.lower):
                return "forward"
        if direction in (None, "backward") and backward is not None and 0 <= backward <= self.max_gap_days:
            if prev.upper is None or (window.upper is not None and window.upper < prev.upper):
                return "backward"
        return None

    def analyze(self, ctx: TraceContext) -> list[BugSighting]:
        walks: list[tuple[str, str, list[Window]]] = []
        by_tool: dict[str, list[ToolCall]] = {}
        for call in ctx.calls:
            by_tool.setdefault(call.tool, []).append(call)
        for tool, calls in by_tool.items():
            walks.extend((tool, direction, chain) for direction, chain in self._chains(calls))
        walks.sort(key=lambda walk: walk[2][0].step)
        sightings = []
        for tool, direction, chain in walks:
            lister = _lister(ctx, tool, chain)
            found = self._found(ctx, chain, lister)
            if found is not None:
                sightings.append(self._sighting(tool, direction, chain, lister, found))
        return sightings

    def _chains(self, calls: list[ToolCall]) -> list[tuple[str, list[Window]]]:
        """The walks (two windows or more) among one tool's calls, in order, with their direction."""
        found: list[tuple[str, list[Window]]] = []
        chain: list[Window] = []
        chain_key: bytes | None = None
        direction: str | None = None
        for call in calls:
            rest, dates = split_dates(call.arguments)
            key = orjson.dumps(rest, option=orjson.OPT_SORT_KEYS, default=str)
            window = window_of(call, dates) if dates and not call.is_error else None
            if window is not None and chain and key == chain_key:
                turn = self._continues(chain, window, direction)
                if turn is not None:
                    chain.append(window)
                    direction = turn
                    continue
            if len(chain) >= 2:
                found.append((direction or "forward", chain))
            chain, chain_key, direction = ([window], key, None) if window is not None else ([], None, None)
        if len(chain) >= 2:
            found.append((direction or "forward", chain))
        return found

    def _found(self, ctx: TraceContext, chain: list[Window], lister: ToolCall | None) -> Found | None:
        """Where the walk found the task's values and what it wasted, or None when it is no waste."""
        if lister is not None:
            return Found(None, "listed", tuple(range(len(chain))))
        by_index = {call.index: call for call in ctx.calls}
        holding = held(ctx, [by_index[window.step] for window in chain])
        if len(holding.positions) >= 2:
            return None  # the answer draws on several windows: they were all needed
        if holding.positions:
            position = holding.positions[0]
            if position == 0:
                return None
            others = tuple(index for index in range(len(chain)) if index != position)
            return Found(position, str(holding.source), others)
        counts = [window.found for window in chain]
        if all(found is not None for found in counts) and sum(1 for found in counts if found) >= 2:
            if answer_states(ctx, sum(found or 0 for found in counts)):
                return None  # the answer adds the windows up
        if len(chain) >= self.min_windows or any(window.empty for window in chain[:-1]):
            return Found(len(chain) - 1, "last window", tuple(range(len(chain) - 1)))
        return None

    def _sighting(
        self, walked: str, direction: str, chain: list[Window], lister: ToolCall | None, found: Found
    ) -> BugSighting:
        tool = lister.tool if lister is not None else walked
        which = "earliest" if direction == "forward" else "latest"
        order = "date_asc" if direction == "forward" else "date_desc"
        listed = ", ".join(
            f"{window.label()} ({'nothing' if window.empty else f'{window.found} found'})"
            if window.found is not None
            else window.label()
            for window in chain
        )
        where = (
            f"; the task's values were in window {found.position + 1} (by the {found.by})"
            if found.position is not None and found.by in ("answer", "baseline")
            else ""
        )
        return BugSighting(
            type="feature_gap",
            slug=("no-date-sort", tool),
            severity="high" if len(chain) >= 5 else "medium",
            tool=tool,
            trigger=f"finding the {which} match by date with `{tool}`",
            observed=f"the agent walked {len(chain)} date windows {direction} with `{walked}`, other "
            f"arguments unchanged: {listed}{where}"
            + (f"; then listed the last window with `{tool}` (step {lister.index})" if lister else ""),
            expected=f"one `{tool}` call returning matches sorted by date, {which} first",
            acceptance_criteria=[
                f"add a sort_order parameter (date_asc/date_desc) to {tool}",
                f"{tool} with sort_order={order} returns the {which} match first, in one call",
                "the default order stays as it is, so existing callers are unaffected",
            ],
            steps=[window.step for window in chain] + ([lister.index] if lister else []),
            wasted=[chain[position].step for position in found.wasted],
            details={
                "direction": direction,
                "walked_tool": walked,
                "found_step": chain[found.position].step if found.position is not None else None,
                "found_by": found.by,
                "windows": [
                    {
                        "step": window.step,
                        "from": window.lower.isoformat() if window.lower else None,
                        "to": window.upper.isoformat() if window.upper else None,
                        "found": window.found,
                    }
                    for window in chain
                ],
            },
        )
