"""Pagination walks: paging through results to find one item."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import orjson

from mcpipechekr.artifacts.trace import ToolCall
from mcpipechekr.evaluate.base import BugSighting, TraceContext, records_of, result_json

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


def _paging_key(arguments: dict[str, Any]) -> str | None:
    for key in arguments:
        if key.lower() in PAGE_KEYS:
            return key
    return None


def _has_more(call: ToolCall, offset: Any) -> bool | None:
    """Whether results remained after this page: None when the result does not say."""
    data = result_json(call)
    if not isinstance(data, dict):
        return None
    for key in ("next_cursor", "nextCursor", "next_page_token", "cursor", "next"):
        if key in data:
            return bool(data[key])
    total = data.get("total", data.get("total_count"))
    if isinstance(total, int) and isinstance(offset, int):
        return total > offset + len(records_of(data))
    return None


def _advances(before: Any, after: Any) -> bool:
    if isinstance(before, int) and isinstance(after, int):
        return after > before
    return before != after and after not in (None, "")


@dataclass
class PaginationWalk:
    """Flags paging through a tool's results (offset, page or cursor advancing) that stops early.

    Rule: consecutive calls to one tool (other tools may come in between) whose
    arguments are identical except a paging argument (`offset`, `page`,
    `cursor`, `skip`, `start`, `page_token`, ...) that advances. Such a walk is
    flagged when it stopped while results remained (the last page's `total`
    or next cursor says so): the agent was looking for one item, which a filter
    or an ordering would have returned on the first page. When the result does
    not tell whether more remained, a walk of `min_pages` pages is flagged.
    A walk that reads to the end (every page needed) is not.

    Blind spots: the first page has no paging argument in many calls (default
    offset 0); it is counted when its other arguments match. An agent that
    gave up early for other reasons looks the same as one that found its item.
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
            chain: list[tuple[ToolCall, Any]] = []
            chain_key: tuple[str | None, bytes] | None = None
            for call in calls + [None]:  # type: ignore[list-item]
                if call is not None:
                    key = _paging_key(call.arguments)
                    rest = {k: v for k, v in call.arguments.items() if k != key}
                    value = call.arguments.get(key) if key else None
                    this_key = (key, orjson.dumps(rest, option=orjson.OPT_SORT_KEYS, default=str))
                    same = chain and this_key[1] == chain_key[1] and key is not None  # type: ignore[index]
                    if same and _advances(chain[-1][1], value):
                        chain.append((call, value))
                        chain_key = this_key
                        continue
                if self._flag(chain):
                    sightings.append(self._sighting(tool, chain))
                if call is not None:
                    chain, chain_key = [(call, value)], this_key
        return sightings

    def _flag(self, chain: list[tuple[ToolCall, Any]]) -> bool:
        if len(chain) < 2:
            return False
        last, offset = chain[-1]
        more = _has_more(last, offset)
        return more if more is not None else len(chain) >= self.min_pages

    def _sighting(self, tool: str, chain: list[tuple[ToolCall, Any]]) -> BugSighting:
        key = _paging_key(chain[-1][0].arguments) or "offset"
        values = [value if value is not None else "(first page)" for _, value in chain]
        return BugSighting(
            type="feature_gap",
            slug=("paging-to-find", tool),
            severity="medium",
            tool=tool,
            trigger=f"looking for one item in `{tool}`'s results",
            observed=f"the agent paged through {len(chain)} pages of `{tool}` ({key}: "
            f"{', '.join(map(str, values))}) and stopped while results remained",
            expected=f"the item on `{tool}`'s first page, through a filter or an ordering",
            acceptance_criteria=[
                f"{tool} offers a filter or sort order that puts the wanted item on the first page",
                f"an agent finds the item with one `{tool}` call",
            ],
            steps=[call.index for call, _ in chain],
            wasted=[call.index for call, _ in chain[:-1]],
            details={"paging_argument": key, "pages": [str(value) for value in values]},
        )
