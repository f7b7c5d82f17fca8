"""Fetched but never read: result fields whose values the agent never used."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import orjson

from mcpipechekr._util.tokens import estimate_tokens
from mcpipechekr.artifacts.trace import ModelTurn
from mcpipechekr.evaluate.base import BugSighting, TraceContext, result_json
from mcpipechekr.evaluate.matching import Haystack, prepare


def leaves(data: Any) -> list[tuple[str, int, Any]]:
    """(path, bytes, value) of every scalar in a result: `emails[].subject`, `total`, `tags[]`.

    bytes: what the scalar adds to the compact JSON, `"key":value,`; summed, then turned into
    tokens once.
    """
    out: list[tuple[str, int, Any]] = []
    _walk(data, "", out)
    return out


def _walk(data: Any, path: str, out: list[tuple[str, int, Any]]) -> None:
    # One pass that names and sizes each scalar: this runs on every value of every result.
    if isinstance(data, dict):
        for key, value in data.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(value, dict | list):
                _walk(value, where, out)
            elif isinstance(value, str):
                out.append((where, len(str(key)) + 6 + len(value.encode()), value))
            else:
                out.append((where, len(str(key)) + 4 + len(orjson.dumps(value, default=str)), value))
    elif isinstance(data, list):
        where = f"{path}[]"
        overhead = len(path.rsplit(".", 1)[-1]) + 4
        for item in data:
            if isinstance(item, dict | list):
                _walk(item, where, out)
            elif isinstance(item, str):
                out.append((where, overhead + 2 + len(item.encode()), item))
            else:
                out.append((where, overhead + len(orjson.dumps(item, default=str)), item))


def _no_fields(data: Any) -> bool:
    """True for a result that is one value with no fields to leave out (a text, wrapped or not)."""
    if isinstance(data, dict) and len(data) == 1:
        data = next(iter(data.values()))
    return not isinstance(data, dict | list)


@dataclass
class UnreadFields:
    """Flags result fields whose values never show up in anything the agent did afterwards.

    Rule: every scalar field of a successful tool result (by path, e.g.
    `emails[].snippet`) is "read" when any of its values, in any call of that
    tool, appears in the model text, thinking, tool arguments or final answer
    that come after that call. "Appears" is the matching rule of
    `evaluate.matching`: normalised case, punctuation and thousands
    separators, dates by their day in any common spelling, long strings by any
    6-word run, values under 3 characters always count as read. Fields never
    read are priced at their share of the results' tokens; a tool is flagged
    when that is at least `min_tokens`, `min_share` of its result tokens, and
    `min_tokens_per_call` on average over its calls: a field or two of a short
    record the agent did not repeat (an e-mail address beside a name) is how
    records look, not a response worth a server change; a blob, a log or a
    long text in every row is.
    The fix it suggests: a projection parameter, or a leaner default response.
    A result that is one value (a text, or the SDK's `{"result": text}`) has no
    fields to leave out and is not judged here (an oversized one is `oversized`'s).
    Tokens are those of the result as the model read it (`result_tokens_estimated`:
    a client's preview when it showed one), shared among fields by their size in the data.

    Blind spots: a model can use a value without repeating it (it read a
    snippet to decide which email to open); runners that export no model text
    make everything but the final answer look unread; a value that is a common
    word matches by accident.
    """

    name: ClassVar[str] = "unread_fields"
    min_tokens: int = 50
    min_share: float = 0.2
    min_tokens_per_call: int = 200

    def analyze(self, ctx: TraceContext) -> list[BugSighting]:
        haystack = Haystack.prepared(
            [
                prepare(" ".join([step.text, *step.thinking]))
                if isinstance(step, ModelTurn)
                else prepare(orjson.dumps(step.arguments, default=str).decode())
                for step in ctx.trace.steps
            ]
            + [prepare(ctx.trace.final_answer or "")]
        )
        last_seen: dict[tuple[type, Any], int] = {}  # each distinct value is looked up once per trace
        per_tool: dict[str, dict[str, Any]] = {}
        for call in ctx.calls:
            data = result_json(call)
            if call.is_error or data is None or _no_fields(data):
                continue
            since = haystack.offsets[call.index + 1]
            entry = per_tool.get(call.tool)
            if entry is None:
                entry = per_tool[call.tool] = {"read": set(), "tokens": {}, "steps": [], "total": 0}
            entry["steps"].append(call.index)
            data_tokens = estimate_tokens(data) or 1
            scale = call.result_tokens_estimated / data_tokens
            entry["total"] += call.result_tokens_estimated
            read: set[str] = entry["read"]
            tokens: dict[str, float] = entry["tokens"]
            for path, size, value in leaves(data):
                tokens[path] = tokens.get(path, 0) + size * scale / 4
                if path in read:
                    continue
                memo = (value.__class__, value)
                position = last_seen.get(memo)
                if position is None:
                    position = last_seen[memo] = haystack.last_seen(value)
                if position >= since:
                    read.add(path)
        sightings = []
        for tool, entry in sorted(per_tool.items()):
            unread = {path: tokens for path, tokens in entry["tokens"].items() if path not in entry["read"]}
            wasted = round(sum(unread.values()))
            if (
                wasted < self.min_tokens
                or wasted < self.min_share * entry["total"]
                or wasted < self.min_tokens_per_call * len(entry["steps"])
            ):
                continue
            ranked = sorted(unread.items(), key=lambda item: (-item[1], item[0]))
            names = ", ".join(f"{path} (~{round(tokens)} tokens)" for path, tokens in ranked)
            observed = entry["total"]
            sightings.append(
                BugSighting(
                    type="efficiency",
                    slug=("unread-fields", tool),
                    severity="medium" if wasted >= 500 else "low",
                    tool=tool,
                    trigger=f"reading `{tool}` results",
                    observed=f"fields never used afterwards: {names}",
                    expected=f"`{tool}` returns what agents use: a projection parameter or a leaner default",
                    acceptance_criteria=[
                        f"{tool} accepts a parameter selecting the fields to return, or leaves out "
                        f"{', '.join(path for path, _ in ranked[:3])} by default",
                        f"the same task costs at least {wasted} fewer result tokens",
                    ],
                    steps=entry["steps"],
                    observed_tokens=observed,
                    optimal_tokens=observed - wasted,
                    details={"unread_fields": {path: round(tokens) for path, tokens in ranked}},
                )
            )
        return sightings
