"""Repeated calls: the same tool with the same arguments, more than once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import orjson

from mcpipechekr.artifacts.trace import ToolCall
from mcpipechekr.evaluate.base import BugSighting, TraceContext


def call_key(call: ToolCall) -> tuple[str, bytes]:
    """Tool and arguments with keys sorted: `{"a":1,"b":2}` and `{"b":2,"a":1}` are the same call."""
    return call.tool, orjson.dumps(call.arguments, option=orjson.OPT_SORT_KEYS, default=str)


@dataclass
class RepeatedCalls:
    """Flags identical calls (same tool, same arguments after sorting keys) made more than once.

    Rule: every repeat after the first is waste; one sighting per tool, listing
    all copies. Errors count too: retrying the exact call that failed cannot help.

    Classified `agent`: the result was already in the conversation, and no
    change to the server makes a model reuse it.

    Blind spots: a tool whose answer changes over time (a job status, a queue)
    is legitimately polled; arguments that differ only in spelling (`"2019"`
    and `2019`) count as different calls.
    """

    name: ClassVar[str] = "repeated_calls"

    def analyze(self, ctx: TraceContext) -> list[BugSighting]:
        groups: dict[tuple[str, bytes], list[ToolCall]] = {}
        for call in ctx.calls:
            groups.setdefault(call_key(call), []).append(call)
        by_tool: dict[str, list[list[ToolCall]]] = {}
        for (tool, _), calls in groups.items():
            if len(calls) > 1:
                by_tool.setdefault(tool, []).append(calls)
        sightings = []
        for tool, repeats in sorted(by_tool.items()):
            steps = sorted(call.index for calls in repeats for call in calls)
            wasted = sorted(call.index for calls in repeats for call in calls[1:])
            example = repeats[0][0]
            sightings.append(
                BugSighting(
                    type="efficiency",
                    slug=("repeated-calls", tool),
                    severity="low",
                    tool=tool,
                    fixable_by="agent",
                    trigger=f"calling `{tool}` again with arguments it already used",
                    observed=f"{len(wasted)} repeated call(s) of `{tool}`, e.g. "
                    f"{orjson.dumps(example.arguments, default=str).decode()} "
                    f"{len(repeats[0])} times (steps {', '.join(map(str, steps))})",
                    expected="each distinct call made once; its result reused",
                    acceptance_criteria=[
                        f"agents do not repeat identical `{tool}` calls "
                        "(e.g. the result says everything a later step needs)",
                    ],
                    steps=steps,
                    wasted=wasted,
                    details={"repeats": len(wasted)},
                )
            )
        return sightings
