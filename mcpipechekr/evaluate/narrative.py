"""phase2_narrative.md: the bug report in words, for the person who decides what gets fixed.

Without a Phase 2 model (or with `demo`) the narrative is written from the
bug report alone: the bugs, the one with the highest gap, priorities (in
`aggregate.priority_order`, the review's fix order), and a per-task efficiency
table; the same report gives the same text.

With a model (`--phase2-provider`), an evaluator agent reads a digest of the
traces, the baseline and the analyzer's bugs, and writes the narrative; it may
add bugs the rules cannot see. Each addition is validated on its own (an
invalid one is dropped with a note, never the whole answer), gets a stable id
from its type, slug and tool, and is marked `source: llm`; one whose id the
analyzer already reported is dropped, the analyzer's evidence being better.
The evaluator's prompt is its own: it judges, it does not run the tasks.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcpipechekr.artifacts.baseline import Baseline
from mcpipechekr.artifacts.bug_report import Bug, BugReport, BugSeverity, Evidence, FixableBy, bug_id
from mcpipechekr.artifacts.trace import ToolCall
from mcpipechekr.config import Config
from mcpipechekr.errors import UserError
from mcpipechekr.evaluate.aggregate import folded, priority_order
from mcpipechekr.evaluate.base import TraceContext
from mcpipechekr.providers import ProviderSpec

AGENT_MARK = "agent behaviour: evidence, not sent to the fix loop"


def _cell(value: Any) -> str:
    return "-" if value is None else str(value).replace("|", "\\|").replace("\n", " ")


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def render_narrative(report: BugReport, *, traces: int, intro: str | None = None) -> str:
    """The Markdown narrative of a bug report; `intro` (a model's text) goes first when given.

    The review shows it, so its bugs are the report's `train_view`: a bug seen only in holdout
    tasks is counted in one line, not described (its tasks' statistics are listed, marked).
    """
    held_back = len(report.bugs) - len(report.train_view().bugs)
    full, report = report, report.train_view()
    lines = [f"# Phase 2 evaluation of {report.run_id}", ""]
    if full.errored:
        lines += [
            f"**{len(full.errored)} attempt(s) errored and are in no figure below** (an infrastructure "
            "failure: see *Errored attempts*).",
            "",
        ]
    if intro:
        lines += [intro.strip(), "", "---", "", "The figures the analysis is based on:", ""]
    tasks = sorted({stats.task_id for stats in report.tasks})
    lines.append(
        f"{traces} trace(s) of {len(tasks)} task(s) by {report.phase1_provider}; "
        f"{len(report.bugs)} bug(s) found"
        + (f", {len(report.review_flags)} answer(s) to review" if report.review_flags else "")
        + "."
        + (
            f" {held_back} more bug(s) were seen only in holdout tasks: kept in bug_report.json, "
            "not shown to the review or the fix agent."
            if held_back
            else ""
        )
    )
    lines.append("")
    lines += ["## Bugs", ""]
    if not report.bugs:
        lines += ["None: every trace ran as well as the rules can tell.", ""]
    else:
        lines += [
            "| id | type | severity | tool | fixable by | seen | gap (tokens) |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for bug in report.bugs:
            tool = _cell(bug.tool) + (f" (instead of {bug.expected_tool})" if bug.expected_tool else "")
            lines.append(
                f"| {bug.id} | {bug.type} | {bug.severity} | {tool} | {bug.fixable_by} | {bug.occurrences} | "
                f"{bug.token_cost_of_gap} |"
            )
        top = report.bugs[0]
        lines += [
            "",
            "## Highest gap",
            "",
            f"**{top.id}** costs about {top.token_cost_of_gap} tokens per occurrence "
            f"({top.token_cost_observed} observed against {top.token_cost_optimal} optimal), "
            f"seen {top.occurrences} time(s) in {', '.join(top.task_ids) or '-'}.",
            "",
            f"- Trigger: {top.trigger}",
            f"- Observed: {top.observed}",
            f"- Expected: {top.expected}",
        ]
        lines += [f"- Done when: {criterion}" for criterion in top.acceptance_criteria]
        lines += ["", "## Priorities", ""]
        lines += ["In the order the review shows them and the fix loop works on the `server` ones.", ""]
        ranked, inside = folded(priority_order(report.bugs))
        for number, bug in enumerate(ranked, 1):
            lines.append(
                f"{number}. {bug.id} ({bug.severity} {bug.type.replace('_', ' ')}, "
                f"{bug.token_cost_of_gap} tokens x {bug.occurrences}): {bug.trigger}"
                + (f" ({AGENT_MARK})" if bug.fixable_by == "agent" else "")
                + (f"; shares steps priced in {', '.join(bug.see_also)}" if bug.see_also else "")
                + (
                    f"; also covers {', '.join(other.id for other in inside[bug.id])} (no cost of their own)"
                    if bug.id in inside
                    else ""
                )
            )
    lines += ["", "## Per-task efficiency", ""]
    if report.tasks:
        lines += [
            "| task | provider | runs | success | Wilson 95% | pass@k | pass^k | calls (min) | call ratio "
            "| tokens (source) | efficiency |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for stats in full.tasks:
            calls = "-" if stats.mean_calls is None else f"{stats.mean_calls:.1f}"
            tokens = "-" if stats.mean_tokens_observed is None else f"{stats.mean_tokens_observed:.0f}"
            success = f"{stats.successes}/{stats.runs - stats.undecided}"
            if stats.undecided:
                success += f" ({stats.undecided} not checked)"
            held = " (holdout)" if stats.split == "holdout" else ""
            lines.append(
                f"| {stats.task_id}{held} | {_cell(stats.provider)} | {stats.runs} | {success} "
                f"| {stats.wilson_low:.2f}-{stats.wilson_high:.2f} | {stats.pass_at_k:.2f} (k={stats.k}) "
                f"| {stats.pass_hat_k:.2f} | {calls} ({_cell(stats.min_calls)}) | {_ratio(stats.call_ratio)} "
                f"| {tokens} ({_cell(stats.tokens_source)}) | {_ratio(stats.efficiency_ratio)} |"
            )
    else:
        lines.append("No traces.")
    not_checked = [s for s in report.tasks if s.correctness in ("unchecked", "unjudged")]
    if not_checked:
        lines += ["", "## Answers not checked", ""]
        lines += [
            f"- {stats.task_id}: {stats.correctness} ({stats.correctness_reason or 'no reason given'})"
            for stats in not_checked
        ]
    if report.review_flags:
        lines += ["", "## Answers to review", ""]
        for flag in report.review_flags:
            lines.append(f"- {flag.task_id} ({flag.trace}): {flag.reason}")
    if full.errored:
        lines += ["", "## Errored attempts", ""]
        lines += [f"- {item.task_id} ({item.trace}): {item.reason}" for item in full.errored]
    if report.notes:
        lines += ["", "## Notes", ""]
        lines += [f"- {note}" for note in report.notes]
    return "\n".join(lines) + "\n"


# --- the model-backed evaluator ----------------------------------------------------------------

INSTRUCTIONS = """You review how an AI agent used the tools of an MCP server, to tell the server's author what
to fix. You get: traces (each task's prompt, the tool calls with arguments, errors and result sizes, and
the agent's final answer), the accepted answer per task (the baseline), and the bugs a rule-based
analyzer already found, with their token costs.

Write `narrative`: a short Markdown report for the server's author (no top-level heading): what goes
wrong, what it costs, and what to fix first. Judge the server, not the agent.

In `bugs`, list only problems the analyzer missed, each an object with: type (bug, feature_gap,
efficiency, correctness or description), severity (low, medium, high), tool (or null), task_id,
slug (3-6 words naming the problem), trigger, observed, expected, acceptance_criteria (a list of checks
a developer can run), trace (the trace file it shows in), steps (step indexes) and fixable_by (`server`
when a change to the server's code or tool descriptions can remove it, `agent` when it is only how the
model behaved). Return an empty list when the analyzer found everything."""


class LlmBug(BaseModel):
    """A bug the evaluator model adds; validated before it joins the report."""

    model_config = ConfigDict(extra="ignore")

    type: Literal["bug", "feature_gap", "efficiency", "correctness", "description"]
    severity: BugSeverity = "medium"
    tool: str | None = None
    task_id: str | None = None
    slug: str = Field(min_length=1)
    trigger: str = Field(min_length=1)
    observed: str = Field(min_length=1)
    expected: str = Field(min_length=1)
    acceptance_criteria: list[str] = Field(default_factory=list)
    trace: str | None = None
    steps: list[int] = Field(default_factory=list)
    fixable_by: FixableBy | None = None
    """Absent: `agent` for a correctness problem (a wrong answer names no server change), else `server`."""


class EvaluatorAnswer(BaseModel):
    """What the evaluator model returns."""

    narrative: str
    bugs: list[dict[str, Any]] = Field(default_factory=list)


def digest(
    contexts: list[TraceContext], baseline: Baseline | None, report: BugReport, limit: int = 40
) -> str:
    """What the evaluator model reads: compact traces (results by size, not content), baseline, bugs."""
    traces = []
    for ctx in contexts[:limit]:
        calls = [
            {
                "step": step.index,
                "tool": step.tool,
                "arguments": step.arguments,
                "error": step.error_text if step.is_error else None,
                "result_tokens": step.result_tokens_estimated,
            }
            for step in ctx.trace.steps
            if isinstance(step, ToolCall)
        ]
        traces.append(
            {
                "trace": ctx.trace_ref,
                "task_id": ctx.trace.task_id,
                "prompt": ctx.trace.prompt,
                "status": ctx.trace.status,
                "calls": calls,
                "final_answer": (ctx.trace.final_answer or "")[:2000],
            }
        )
    data = {
        "traces": traces,
        "omitted_traces": max(0, len(contexts) - limit),
        "baseline": [
            {"task_id": entry.task_id, "result": entry.result}
            for entry in (baseline.tasks if baseline else [])
        ],
        "analyzer_bugs": [
            bug.model_dump(mode="json", exclude={"evidence", "details"}) for bug in report.bugs
        ],
    }
    return orjson.dumps(data, default=str).decode()[:200_000]


def llm_bugs(raw: list[dict[str, Any]], known_ids: set[str]) -> tuple[list[Bug], list[str]]:
    """Validate the model's additions one by one: (accepted bugs, notes on the rejected ones)."""
    bugs: list[Bug] = []
    notes: list[str] = []
    for number, item in enumerate(raw, 1):
        try:
            extra = LlmBug.model_validate(item)
            new_id = bug_id(extra.type, extra.slug, *([extra.tool] if extra.tool else []))
            evidence = (
                [Evidence(task_id=extra.task_id, trace=extra.trace, steps=sorted(set(extra.steps)))]
                if extra.trace and extra.task_id
                else []
            )
            bug = Bug(
                id=new_id,
                type=extra.type,
                severity=extra.severity,
                source="llm",
                tool=extra.tool,
                task_id=extra.task_id,
                trigger=extra.trigger,
                observed=extra.observed,
                expected=extra.expected,
                acceptance_criteria=extra.acceptance_criteria,
                token_cost_observed=0,
                token_cost_optimal=0,
                token_cost_of_gap=0,
                task_ids=[extra.task_id] if extra.task_id else [],
                evidence=evidence,
                fixable_by=extra.fixable_by or ("agent" if extra.type == "correctness" else "server"),
            )
        except (ValidationError, ValueError) as exc:
            first = str(exc).splitlines()
            notes.append(f"the phase-2 model's bug #{number} was dropped: invalid ({' '.join(first[:3])})")
            continue
        if bug.id in known_ids:
            notes.append(f"the phase-2 model's bug #{number} ({bug.id}) was already reported by the analyzer")
            continue
        known_ids.add(bug.id)
        bugs.append(bug)
    return bugs, notes


def ask_evaluator(spec: ProviderSpec, config: Config, prompt: str) -> EvaluatorAnswer:
    """Run the evaluator model once on the digest; a provider failure is a UserError naming it."""
    from pydantic_ai import Agent, PromptedOutput
    from pydantic_ai.settings import ModelSettings

    from mcpipechekr.llm import build_model

    agent = Agent(
        build_model(spec, config, purpose="Phase 2 evaluation"),
        output_type=PromptedOutput(EvaluatorAnswer),
        instructions=INSTRUCTIONS,
        model_settings=ModelSettings(timeout=config.timeouts.task_s),
        retries=1,
    )
    try:
        return asyncio.run(agent.run(prompt)).output
    except Exception as exc:
        raise UserError(f"the phase-2 model {spec} failed: {type(exc).__name__}: {exc}") from exc
