"""The trace viewer: every attempt of a run, turn by turn, with the wasted steps marked.

Each trace is a `<details>` (closed until opened, so a run of many attempts
stays readable); each step an `<li>` with the id `step-<run>-<trace>-<index>`
that the bug table's evidence links point at. A model turn shows its text, its
visible reasoning and its tokens; a tool call its arguments, the result as the
model saw it (the client's preview when it was shown one) and its size in
tokens. A step named as evidence by a bug is marked `wasted` and says which bug.
"""

from __future__ import annotations

from mcpipechekr.artifacts import ModelTurn, ToolCall
from mcpipechekr.report._data import RunData, TraceData
from mcpipechekr.report._html import dom_id, esc, number, pretty_json, tag, text


def step_id(run_id: str, stem: str, index: int) -> str:
    """The element id of one step of one trace of one run (unique across the report)."""
    return dom_id("step", run_id, stem, str(index))


def trace_id(run_id: str, stem: str) -> str:
    """The element id of one trace of one run."""
    return dom_id("trace", run_id, stem)


def render_traces(run: RunData) -> str:
    """Every trace of the run, in name order (task, provider, repetition)."""
    if not run.traces:
        return tag("p", "No traces in this run.", class_="muted")
    wasted = run.wasted_steps()
    return "".join(_trace(run, data, wasted) for data in run.traces)


def render_trace(run: RunData, data: TraceData) -> str:
    """One trace on its own, already open: the review page's trace view (`review_web`) shows one
    attempt at a time, so the step an evidence link names is visible without a click."""
    return _trace(run, data, run.wasted_steps(), opened=True)


def _trace(
    run: RunData, data: TraceData, wasted: dict[tuple[str, int], list[str]], *, opened: bool = False
) -> str:
    trace = data.trace
    marked = sum(1 for (stem, _), _ids in wasted.items() if stem == data.stem)
    totals = trace.totals
    summary = tag(
        "summary",
        tag("span", esc(trace.task_id), class_="task")
        + f" {esc(trace.provider)} r{trace.repetition} · "
        + tag("span", esc(trace.status), class_=f"status status-{trace.status}")
        + f" · {totals.tool_calls} call(s) · {number(totals.total_tokens)} tokens"
        + f" ({esc(totals.usage_source)})"
        + (tag("span", f" · {marked} wasted step(s)", class_="wasted-count") if marked else ""),
    )
    head = tag("p", tag("b", "Prompt: ") + text(trace.prompt), class_="prompt")
    if trace.status_reason:
        head += tag("p", tag("b", "Why: ") + text(trace.status_reason), class_="reason")
    steps = "".join(
        _step(run.run_id, data.stem, step, wasted.get((data.stem, step.index), [])) for step in trace.steps
    )
    answer = (
        tag("div", tag("b", "Final answer") + tag("pre", text(trace.final_answer)), class_="answer")
        if trace.final_answer is not None
        else tag("p", "No final answer.", class_="muted")
    )
    return tag(
        "details",
        summary + head + tag("ol", steps, class_="steps", start=0) + answer,
        class_="trace",
        open=opened,
        id=trace_id(run.run_id, data.stem),
        data_trace=data.relative,
        data_task=trace.task_id,
    )


def _step(run_id: str, stem: str, step: ModelTurn | ToolCall, bugs: list[str]) -> str:
    if isinstance(step, ModelTurn):
        kind = "model"
        usage = step.usage
        tokens = f"{number(usage.input_tokens)} in / {number(usage.output_tokens)} out"
        head = f"model · {tokens} ({esc(usage.source)})"
        body = "".join(tag("pre", text(block), class_="thinking") for block in step.thinking)
        body += tag("pre", text(step.text), class_="model-text") if step.text else ""
    else:
        kind = "tool_call"
        head = (
            f"call {tag('code', esc(step.tool))} · {number(step.result_tokens_estimated)} tokens"
            f" · {step.latency_ms:,.0f} ms"
            + (" · " + tag("span", "error", class_="error") if step.is_error else "")
        )
        body = tag("div", tag("b", "Arguments") + tag("pre", pretty_json(step.arguments)), class_="arguments")
        body += tag("div", tag("b", _result_label(step)) + tag("pre", _result_text(step)), class_="result")
    marks = ""
    if bugs:
        marks = tag("span", "wasted: " + ", ".join(tag("code", esc(bug)) for bug in bugs), class_="wasted-by")
    return tag(
        "li",
        tag("div", f"#{step.index} " + head + marks, class_="step-head") + body,
        class_=f"step {kind}" + (" wasted" if bugs else ""),
        id=step_id(run_id, stem, step.index),
        data_step=step.index,
        data_bugs=" ".join(bugs) or None,
    )


def _result_label(step: ToolCall) -> str:
    if step.result_preview:
        full = number(step.result_tokens_full)
        return f"Result as the model saw it (a preview; the whole result was {full} tokens)"
    return "Error the model saw" if step.is_error else "Result as the model saw it"


def _result_text(step: ToolCall) -> str:
    """The result's content blocks as text (JSON for other blocks), else its structured content."""
    pieces = []
    for block in step.result_content:
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            pieces.append(text(block["text"]))
        else:
            pieces.append(pretty_json(block))
    if not pieces and step.structured_content is not None:
        pieces.append(pretty_json(step.structured_content))
    if not pieces and step.error_text:
        pieces.append(text(step.error_text))
    return "\n".join(pieces) if pieces else esc("(empty)")
