"""Compact traces for the Phase 2 tests: a few lines per scenario instead of a page of JSON.

`call(tool, args, result)` and `say(text)` build steps; `make_trace` numbers
them, sizes each result with the same `measure_result` every runner uses, and
validates the whole thing as a Trace, so a scenario that could not come from a
real runner fails here rather than passing an analyzer by accident. `ctx_of` wraps
a trace as the TraceContext the analyzers and pricing read.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from mcpipechekr.artifacts.baseline import BaselineEntry
from mcpipechekr.artifacts.trace import ModelTurn, Trace, Usage, tool_call_from_result
from mcpipechekr.evaluate.base import TraceContext
from mcpipechekr.tasks import Task

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def call(tool: str, arguments: dict[str, Any], result: Any = None, *, error: str | None = None) -> dict:
    return {"kind": "call", "tool": tool, "arguments": arguments, "result": result, "error": error}


def say(text: str, *, tokens: int | None = None) -> dict:
    return {"kind": "say", "text": text, "tokens": tokens}


def make_trace(
    task_id: str,
    steps: list[dict],
    *,
    answer: str | None = "done",
    repetition: int = 1,
    provider: str = "demo",
    status: str = "completed",
) -> Trace:
    built = []
    for index, step in enumerate(steps):
        if step["kind"] == "say":
            usage = (
                Usage(input_tokens=step["tokens"], output_tokens=10, source="reported")
                if step["tokens"] is not None
                else Usage.estimated("", step["text"])
            )
            built.append(ModelTurn(index=index, text=step["text"], usage=usage))
            continue
        if step["error"] is not None:
            content = [{"type": "text", "text": step["error"]}]
            built.append(
                tool_call_from_result(
                    index=index,
                    call_id=f"c{index}",
                    tool=step["tool"],
                    arguments=step["arguments"],
                    content=content,
                    is_error=True,
                    latency_ms=5.0,
                )
            )
            continue
        result = step["result"]
        content = [{"type": "text", "text": json.dumps(result, indent=2)}]
        built.append(
            tool_call_from_result(
                index=index,
                call_id=f"c{index}",
                tool=step["tool"],
                arguments=step["arguments"],
                content=content,
                structured_content=result if isinstance(result, dict) else None,
                latency_ms=5.0,
            )
        )
    return Trace(
        task_id=task_id,
        repetition=repetition,
        provider=provider,
        runner="demo",
        prompt=f"prompt of {task_id}",
        started_at=T0,
        ended_at=T0,
        status=status,
        steps=built,
        final_answer=answer,
    )


def ctx_of(
    trace: Trace, task: Task | None = None, baseline: BaselineEntry | None = None, **kw: Any
) -> TraceContext:
    return TraceContext(
        trace=trace, trace_ref=f"traces/{trace.task_id}.json", task=task, baseline=baseline, **kw
    )
