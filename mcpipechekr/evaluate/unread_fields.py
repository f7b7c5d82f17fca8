"""Fetched but never read: result fields whose values the agent never used."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import orjson

from mcpipechekr._util.tokens import estimate_tokens
from mcpipechekr.artifacts.trace import ModelTurn
from mcpipechekr.evaluate.base import Finding, TraceContext, result_json
from mcpipechekr.evaluate.matching import Haystack, prepare


def leaves(data: Any, path: str = "") -> list[tuple[str, str, Any]]:
    """(path, key, value) of every scalar in a result: `emails[].subject`, `total`, `tags[]`."""
    out: list[tuple[str, str, Any]] = []
    if isinstance(data, dict):
        for key, value in data.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(value, dict | list):
                out.extend(leaves(value, where))
            else:
                out.append((where, str(key), value))
    elif isinstance(data, list):
        for item in data:
            if isinstance(item, dict | list):
                out.extend(leaves(item, f"{path}[]"))
            else:
                out.append((f"{path}[]", path.rsplit(".", 1)[-1], item))
    return out


def _field_bytes(key: str, value: Any) -> int:
    """Bytes of `"key":value,` in compact JSON; summed, then turned into tokens once."""
    return (
        len(key)
        + 4
        + (len(value.encode()) + 2 if isinstance(value, str) else len(orjson.dumps(value, default=str)))
    )


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
    when that is at least `min_tokens` and `min_share` of its result tokens.
    The fix it suggests: a projection parameter, or a leaner default response.

    Blind spots: a model can use a value without repeating it (it read a
    snippet to decide which email to open); runners that export no model text
    make everything but the final answer look unread; a value that is a common
    word matches by accident.
    """

    name: ClassVar[str] = "unread_fields"
    min_tokens: int = 50
    min_share: float = 0.2

    def analyze(self, ctx: TraceContext) -> list[Finding]:
        steps = ctx.trace.steps
        pieces: list[tuple[str, set[str]]] = []
        for step in steps:
            if isinstance(step, ModelTurn):
                pieces.append(prepare(" ".join([step.text, *step.thinking])))
            else:
                pieces.append(prepare(orjson.dumps(step.arguments, default=str).decode()))
        pieces.append(prepare(ctx.trace.final_answer or ""))
        haystack = Haystack.prepared(pieces)
        per_tool: dict[str, dict[str, Any]] = {}
        for call in ctx.calls:
            data = result_json(call)
            if call.is_error or data is None:
                continue
            since = haystack.offsets[call.index + 1]
            entry = per_tool.setdefault(
                call.tool, {"read": set(), "tokens": {}, "steps": [], "total": 0, "seen": set()}
            )
            entry["steps"].append(call.index)
            data_tokens = estimate_tokens(data) or 1
            scale = call.result_tokens_estimated / data_tokens
            entry["total"] += call.result_tokens_estimated
            for path, key, value in leaves(data):
                entry["tokens"][path] = entry["tokens"].get(path, 0) + _field_bytes(key, value) * scale / 4
                if path in entry["read"]:
                    continue
                seen = (path, value, since) if isinstance(value, str | int | float) else None
                if seen is not None and seen in entry["seen"]:
                    continue  # the same value after the same step: already known to be unread
                if haystack.contains(value, since=since):
                    entry["read"].add(path)
                elif seen is not None:
                    entry["seen"].add(seen)
        findings = []
        for tool, entry in sorted(per_tool.items()):
            unread = {path: tokens for path, tokens in entry["tokens"].items() if path not in entry["read"]}
            wasted = round(sum(unread.values()))
            if wasted < self.min_tokens or wasted < self.min_share * entry["total"]:
                continue
            ranked = sorted(unread.items(), key=lambda item: (-item[1], item[0]))
            names = ", ".join(f"{path} (~{round(tokens)} tokens)" for path, tokens in ranked)
            observed = entry["total"]
            findings.append(
                Finding(
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
        return findings
