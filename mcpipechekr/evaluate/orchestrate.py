"""Phase 2: evaluate a run's traces into bug_report.json and phase2_narrative.md.

`evaluate_run` reads the run's traces, the task file and the shared baseline,
runs every analyzer on every trace (an analyzer that raises is recorded in the
report's notes, and the rest go on), checks each final answer against the
baseline, prices the sightings, merges them into bugs and computes per-task
statistics. Nothing here depends on the clock except `evaluated_at`, so
evaluating the same run twice writes the same report apart from that field.

A run's success criterion per trace: the trace completed and its answer was
not found wrong. Each task's statistics say how that was decided
(`TaskStats.correctness`): `checked` against the baseline's identifying values,
`judged` by the phase-2 model (open-ended answers), `unchecked` (no baseline,
or a baseline that names nothing to look for) or `unjudged` (open-ended, no
phase-2 model). An unchecked or unjudged answer is neither failed nor counted
as a success (`TaskStats.undecided`; the rates are over the decided runs), and
the report says it was not checked, with the reason.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpipechekr._util.collector import collector_paused
from mcpipechekr.artifacts import RunDir, read_model, read_trace, utc_now, write_model
from mcpipechekr.artifacts.atomic import atomic_write_text
from mcpipechekr.artifacts.baseline import Baseline
from mcpipechekr.artifacts.bug_report import BugReport, BugSeverity, ErroredAttempt, ReviewFlag, TaskStats
from mcpipechekr.artifacts.runstate import load_manifest
from mcpipechekr.artifacts.tools_snapshot import ToolsSnapshot
from mcpipechekr.artifacts.trace import list_traces
from mcpipechekr.config import Config
from mcpipechekr.errors import UserError
from mcpipechekr.evaluate.aggregate import Occurrence, assign_steps, drop_explained, merge, sort_bugs
from mcpipechekr.evaluate.answer_judge import AnswerJudge
from mcpipechekr.evaluate.base import Analyzer, Budgets, BugSighting, TraceContext
from mcpipechekr.evaluate.call_count import CallCount
from mcpipechekr.evaluate.correctness import CheckStatus, check_deterministic, similarity
from mcpipechekr.evaluate.costing import price, trace_tokens
from mcpipechekr.evaluate.date_windows import DateWindows
from mcpipechekr.evaluate.error_workaround import ErrorWorkaround
from mcpipechekr.evaluate.narrative import ask_evaluator, digest, llm_bugs, render_narrative
from mcpipechekr.evaluate.oversized import OversizedResults
from mcpipechekr.evaluate.pagination import PaginationWalk
from mcpipechekr.evaluate.repeated_calls import RepeatedCalls
from mcpipechekr.evaluate.stats import pass_at_k, pass_hat_k, wilson_interval
from mcpipechekr.evaluate.unread_fields import UnreadFields
from mcpipechekr.evaluate.wrong_tool import WrongTool
from mcpipechekr.tasks import Task, load_tasks

DEFAULT_K = 3


def default_analyzers() -> list[Analyzer]:
    """Every analyzer with its default settings, in the order their sightings are listed."""
    return [
        CallCount(),
        RepeatedCalls(),
        DateWindows(),
        PaginationWalk(),
        ErrorWorkaround(),
        UnreadFields(),
        WrongTool(),
        OversizedResults(),
    ]


@dataclass
class TraceOutcome:
    """What the evaluation concluded about one trace."""

    ctx: TraceContext
    success: bool
    sightings: list[BugSighting]
    flag: ReviewFlag | None = None
    status: CheckStatus = "checked"
    reason: str = ""


@dataclass
class Correctness:
    """The correctness check of one trace: accepted or not, how it was decided, and why."""

    success: bool
    status: CheckStatus
    reason: str
    sighting: BugSighting | None = None
    flag: ReviewFlag | None = None


def _seen_results(ctx: TraceContext) -> list[object]:
    """What the answer was drawn from: each tool result of the trace, and the baseline's result."""
    seen: list[object] = []
    for call in ctx.calls:
        if call.structured_content is not None:
            seen.append(call.structured_content)
        else:
            seen.extend(block.get("text") for block in call.result_content if block.get("type") == "text")
    if ctx.baseline is not None and isinstance(ctx.baseline.result, dict):
        seen.append(ctx.baseline.result.get("structured_content"))
    return seen


def _correctness(ctx: TraceContext, threshold: float) -> Correctness:
    """How the trace's answer compares with the baseline (see the module docstring)."""
    trace, task, entry = ctx.trace, ctx.task, ctx.baseline
    completed = trace.status == "completed"
    if entry is None or task is None:
        return Correctness(completed, "unchecked", "no baseline entry for the task")
    if task.task_type == "open_ended":
        reason = "open-ended: no phase-2 model to judge the answer"
        if not completed:
            return Correctness(False, "unjudged", reason)
        score = similarity(trace.final_answer, entry.result)
        divergence = 1.0 - score
        if divergence <= threshold:
            return Correctness(True, "unjudged", reason)
        flag = ReviewFlag(
            task_id=trace.task_id,
            trace=ctx.trace_ref,
            similarity=round(score, 4),
            divergence=round(divergence, 4),
            reason=f"the answer shares few words with the baseline ({divergence:.0%} divergent, "
            f"threshold {threshold:.0%}): it may say the same in other words; not judged",
        )
        return Correctness(True, "unjudged", reason, flag=flag)
    verdict = check_deterministic(trace.final_answer, entry.result, _seen_results(ctx))
    if verdict.status == "unchecked":
        return Correctness(completed, "unchecked", verdict.reason)
    if not completed:
        return Correctness(False, "checked", "the trace did not complete")
    if verdict.correct:
        return Correctness(True, "checked", verdict.reason)
    details: dict[str, Any] = {"missing": verdict.missing[:20]}
    if verdict.extra:
        details["extra"] = verdict.extra[:20]
    wanted = ", ".join(verdict.missing[:5]) or "the baseline values"
    if verdict.extra:
        wanted += f" and not {', '.join(verdict.extra[:5])}"
    return Correctness(
        False,
        "checked",
        verdict.reason,
        _wrong_answer(ctx, f"the final answer {verdict.reason}", wanted, details),
    )


def _wrong_answer(
    ctx: TraceContext,
    observed: str,
    wanted: str,
    details: dict[str, Any],
    *,
    severity: BugSeverity = "high",
    expected: str = "the answer names the baseline's values (runs/baseline.json)",
) -> BugSighting:
    """A correctness sighting: the task's answer was wrong."""
    trace, task, entry = ctx.trace, ctx.task, ctx.baseline
    assert task is not None and entry is not None
    last = trace.steps[-1].index if trace.steps else None
    spent = sum(ctx.call_tokens.values())
    answered_from = next((call.tool for call in reversed(ctx.calls) if not call.is_error), None)
    return BugSighting(
        type="correctness",
        slug=("wrong-answer", trace.task_id),
        severity=severity,
        # the answer came from the last result the agent read; a wrong answer alone names no server change
        tool=answered_from,
        expected_tool=task.expected_tool if task.expected_tool != answered_from else None,
        fixable_by="agent",
        trigger=f"answering task `{trace.task_id}`",
        observed=observed,
        expected=expected,
        acceptance_criteria=[f"an agent's answer to `{trace.task_id}` names {wanted}"],
        steps=[last] if last is not None else [],
        priced_steps=[call.index for call in ctx.calls],
        observed_tokens=spent,
        optimal_tokens=min(spent, entry.reference_tokens) if entry.reference_tokens is not None else spent,
        details=details,
        analyzer="correctness",
    )


def judge_open_ended(outcome: TraceOutcome, judge: AnswerJudge) -> str | None:
    """Let the phase-2 model judge an unjudged open-ended answer; a note when it could not."""
    ctx = outcome.ctx
    if outcome.status != "unjudged" or ctx.task is None or ctx.baseline is None:
        return None
    if ctx.trace.status != "completed" or not ctx.trace.final_answer:
        return None
    try:
        verdict = judge.judge(ctx.task.prompt, ctx.baseline.result, ctx.trace.final_answer)
    except Exception as exc:  # a failed judge leaves the answer unjudged; the evaluation goes on
        return (
            f"the answer of {ctx.trace_ref} was not judged: {judge.label} failed: {type(exc).__name__}: {exc}"
        )
    outcome.status, outcome.reason, outcome.flag = "judged", f"{judge.label}: {verdict.reason}", None
    outcome.success = verdict.correct
    if not verdict.correct:
        outcome.sightings.append(
            _wrong_answer(
                ctx,
                f"the phase-2 model judged the answer wrong: {verdict.reason}",
                "what the task asks, as the phase-2 model judges it",
                {"judge": judge.label, "reason": verdict.reason},
                severity="medium",
                expected="the answer is right by the baseline's reference material (runs/baseline.json)",
            )
        )
    return None


def evaluate_trace(
    ctx: TraceContext, analyzers: Sequence[Analyzer], threshold: float
) -> tuple[TraceOutcome, list[str]]:
    """Every analyzer and the correctness check on one trace; analyzer failures become notes."""
    notes: list[str] = []
    sightings: list[BugSighting] = []
    for analyzer in analyzers:
        try:
            found = analyzer.analyze(ctx)
        except Exception as exc:  # one broken rule must not lose the rest of the evaluation
            notes.append(f"analyzer {analyzer.name} failed on {ctx.trace_ref}: {type(exc).__name__}: {exc}")
            continue
        for sighting in found:
            sighting.analyzer = analyzer.name
        sightings.extend(found)
    sightings = drop_explained(sightings, len(ctx.calls) - (ctx.min_calls or 0))
    verdict = _correctness(ctx, threshold)
    if verdict.sighting is not None:
        sightings.append(verdict.sighting)
    sightings = assign_steps(sightings, ctx)
    outcome = TraceOutcome(ctx, verdict.success, sightings, verdict.flag, verdict.status, verdict.reason)
    return outcome, notes


PARALLEL_FROM = 256
"""Runs with at least this many traces are analysed by forked worker processes (one per core, up to 8)."""
PARALLEL_MIN_CORES = 4
"""Fewer cores than this: serial. On two busy cores the workers only fight each other."""

_WORK: tuple[list[TraceContext], Sequence[Analyzer], float] | None = None


def _evaluate_chunk(
    bounds: tuple[int, int],
) -> list[tuple[list[BugSighting], bool, ReviewFlag | None, CheckStatus, str, list[str]]]:
    assert _WORK is not None
    contexts, analyzers, threshold = _WORK
    out = []
    for ctx in contexts[bounds[0] : bounds[1]]:
        o, notes = evaluate_trace(ctx, analyzers, threshold)
        out.append((o.sightings, o.success, o.flag, o.status, o.reason, notes))
    return out


def _evaluate_all(
    contexts: list[TraceContext], analyzers: Sequence[Analyzer], threshold: float
) -> list[tuple[TraceOutcome, list[str]]]:
    """evaluate_trace on every context, in order; forked workers share the work on big runs.

    Workers inherit the traces by fork (nothing is pickled on the way in) and send back only the
    sightings, so the result is the same as a serial evaluation, in the same order.
    """
    workers = min(8, os.cpu_count() or 1)
    if (
        len(contexts) < PARALLEL_FROM
        or workers < PARALLEL_MIN_CORES
        or "fork" not in mp.get_all_start_methods()
    ):
        return [evaluate_trace(ctx, analyzers, threshold) for ctx in contexts]
    global _WORK
    _WORK = (contexts, analyzers, threshold)
    size = -(-len(contexts) // (workers * 4))
    chunks = [(start, min(start + size, len(contexts))) for start in range(0, len(contexts), size)]
    try:
        with mp.get_context("fork").Pool(workers) as pool:
            parts = pool.map(_evaluate_chunk, chunks)
    finally:
        _WORK = None
    results = [item for part in parts for item in part]
    return [
        (TraceOutcome(ctx, success, sightings, flag, status, reason), notes)
        for ctx, (sightings, success, flag, status, reason, notes) in zip(contexts, results, strict=True)
    ]


def task_stats(outcomes: list[TraceOutcome], k: int = DEFAULT_K) -> list[TaskStats]:
    """Per task and provider: success rate with its Wilson interval, pass@k, pass^k, calls and tokens."""
    groups: dict[tuple[str, str], list[TraceOutcome]] = {}
    for outcome in outcomes:
        groups.setdefault((outcome.ctx.trace.task_id, outcome.ctx.trace.provider), []).append(outcome)
    stats = []
    for (task_id, provider), group in sorted(groups.items()):
        runs = len(group)
        # An answer nobody could check is neither a success nor a failure: the rates are over the rest.
        decided = [outcome for outcome in group if outcome.status in ("checked", "judged")]
        successes = sum(outcome.success for outcome in decided)
        low, high = wilson_interval(successes, len(decided))  # (0, 1) when none was decided: unknown
        kk = max(1, min(k, len(decided) or 1))
        ctx = group[0].ctx
        minimum = ctx.min_calls
        mean_calls = sum(len(outcome.ctx.calls) for outcome in group) / runs
        tokens = [trace_tokens(outcome.ctx.trace) for outcome in group]
        sources = {source for _, source in tokens}
        reference = ctx.baseline.reference_tokens if ctx.baseline else None
        won = [sum(outcome.ctx.call_tokens.values()) for outcome in group if outcome.success]
        status, reason = _task_correctness(group)
        mean_won = sum(won) / len(won) if won else None
        stats.append(
            TaskStats(
                task_id=task_id,
                provider=provider,
                runs=runs,
                successes=successes,
                undecided=runs - len(decided),
                success_rate=successes / len(decided) if decided else 0.0,
                wilson_low=round(low, 4),
                wilson_high=round(high, 4),
                k=kk,
                pass_at_k=round(pass_at_k(len(decided), successes, kk), 4) if decided else 0.0,
                pass_hat_k=round(pass_hat_k(len(decided), successes, kk), 4) if decided else 0.0,
                efficiency_ratio=round(reference / mean_won, 4)
                if reference is not None and mean_won
                else None,
                min_calls=minimum,
                mean_calls=round(mean_calls, 3),
                call_ratio=round(mean_calls / minimum, 3) if minimum else None,
                mean_tokens_observed=round(sum(count for count, _ in tokens) / runs, 1),
                tokens_source=sources.pop() if len(sources) == 1 else "mixed",
                token_cost_optimal=reference,
                correctness=status,
                correctness_reason=reason,
                split=ctx.task.split if ctx.task is not None else "train",
            )
        )
    return stats


def _task_correctness(group: list[TraceOutcome]) -> tuple[CheckStatus, str]:
    """How a task's answers were decided: `checked`/`judged` when any was, else why none was."""
    for wanted in ("checked", "judged", "unchecked", "unjudged"):
        for outcome in group:
            if outcome.status == wanted:
                return outcome.status, outcome.reason
    return group[0].status, group[0].reason


def evaluate_contexts(
    contexts: list[TraceContext],
    *,
    run_id: str,
    phase1_provider: str,
    threshold: float,
    analyzers: Sequence[Analyzer] | None = None,
    notes: Sequence[str] = (),
    judge: AnswerJudge | None = None,
) -> tuple[BugReport, list[TraceOutcome]]:
    """The analyzer's bug report for traces already read; `judge` judges open-ended answers."""
    chosen = list(analyzers) if analyzers is not None else default_analyzers()
    outcomes: list[TraceOutcome] = []
    all_notes = list(notes)
    occurrences: list[Occurrence] = []
    for ctx, (outcome, trace_notes) in zip(contexts, _evaluate_all(contexts, chosen, threshold), strict=True):
        outcomes.append(outcome)
        all_notes.extend(trace_notes)
        if judge is not None:
            note = judge_open_ended(outcome, judge)
            if note:
                all_notes.append(note)
        occurrences.extend(Occurrence(sighting, ctx, price(sighting, ctx)) for sighting in outcome.sightings)
    report = BugReport(
        run_id=run_id,
        phase1_provider=phase1_provider,
        evaluated_at=utc_now(),
        bugs=merge(occurrences),
        tasks=task_stats(outcomes),
        review_flags=[outcome.flag for outcome in outcomes if outcome.flag is not None],
        notes=all_notes,
    )
    correct = [o for o in outcomes if o.success and o.status in ("checked", "judged")]
    report.notes.extend(beaten_minimums(task_stats(correct)) if correct else [])
    return report, outcomes


def beaten_minimums(stats: Sequence[TaskStats]) -> list[str]:
    """A note per task whose traces did better than the known minimum (call ratio below 1, or
    efficiency above 1): the figures stay as measured, and the note says what they mean.

    Such a trace is no agent's feat: the minimum it beats is stale (made for the server
    before a fix changed its tools) or was never minimal (reference calls that take a detour).
    The evaluation passes the statistics of the answers checked correct alone: a wrong answer
    in fewer calls says nothing of the minimum, and an unchecked one cannot be trusted to.
    """
    notes = []
    for task in stats:
        beaten = []
        if task.call_ratio is not None and task.call_ratio < 1:
            beaten.append(f"{task.mean_calls:g} call(s) on average where the minimum is {task.min_calls}")
        if task.efficiency_ratio is not None and task.efficiency_ratio > 1:
            beaten.append(
                f"fewer tokens than the baseline's {task.token_cost_optimal:,} (efficiency "
                f"{task.efficiency_ratio:.2f})"
            )
        if beaten:
            notes.append(
                f"task `{task.task_id}` ({task.provider}) beat its known minimum: {'; '.join(beaten)}. "
                "Its baseline entry is stale (made before the tools changed: `mcpipechekr baseline "
                f"--task {task.task_id}` rebuilds it) or the task's reference calls are not the "
                "cheapest way (correct its reference_calls or min_calls)"
            )
    return notes


def stale_baseline_note(run: RunDir, baseline: Baseline, task_ids: Sequence[str]) -> str | None:
    """A note when baseline entries of the run's tasks were made against other tool definitions than
    the run's tools.json: their minimum may not be the server's any more."""
    if not run.tools.exists():
        return None
    tools_hash = read_model(run.tools, ToolsSnapshot).tools_hash
    stale = [task_id for task_id in baseline.stale_tasks(tools_hash) if task_id in set(task_ids)]
    if not stale:
        return None
    return (
        f"the baseline is stale for {', '.join(f'`{task_id}`' for task_id in stale)}: made against other "
        "tool definitions than this run's tools.json, so its answers and minimums may be the old "
        "server's (run `mcpipechekr baseline` to rebuild them, then evaluate again)"
    )


def _task_map(config: Config) -> dict[str, Task]:
    return {task.task_id: task for task in load_tasks(config.paths.tasks).tasks}


INFRASTRUCTURE_FAILURES = ("errored", "error")
"""Trace statuses that are no answer: kept apart from the evaluation (`BugReport.errored`)."""


def load_contexts(
    config: Config, run_dir: RunDir, baseline: Baseline | None, errored: list[ErroredAttempt] | None = None
) -> tuple[list[TraceContext], list[str]]:
    """The run's traces with their tasks and baseline entries; unreadable traces become notes.

    An `errored` trace (its agent never had a working server) is no evidence of anything, nor is an
    `error` one (the agent, its runner or the model provider failed after its retries): neither
    gave an answer the server is to blame for. Both are left out, and added to `errored` when a
    list is given, and so is an attempt the harness cut short (Ctrl-C, the phase's timeout, another
    attempt's server halt: `Trace.cut_by_harness`). A `timeout` of the attempt's own time stays: an
    agent that loops until it runs out of time is what a server's tools can cause.
    """
    tasks = _task_map(config)
    budgets = Budgets(default=config.check.budget_tokens, per_tool=dict(config.check.tool_budgets))
    contexts: list[TraceContext] = []
    notes: list[str] = []
    unknown: set[str] = set()
    for path in list_traces(run_dir):
        ref = path.relative_to(run_dir.root).as_posix()
        try:
            trace = read_trace(path)
        except UserError as exc:
            notes.append(f"{ref} was skipped: {exc.message.splitlines()[0]}")
            continue
        if trace.status in INFRASTRUCTURE_FAILURES or trace.cut_by_harness:
            if errored is not None:
                reason = trace.status_reason or ""
                if trace.cut_by_harness:
                    reason = f"cut short by the harness: {reason or 'no reason given'}"
                elif trace.status == "error":
                    reason = f"the agent, its runner or its model failed: {reason or 'no reason given'}"
                errored.append(ErroredAttempt(trace=ref, task_id=trace.task_id, reason=reason))
            continue
        task = tasks.get(trace.task_id)
        if task is None:
            unknown.add(trace.task_id)
        entry = baseline.entry(trace.task_id) if baseline else None
        contexts.append(TraceContext(trace=trace, trace_ref=ref, task=task, baseline=entry, budgets=budgets))
    notes.extend(
        f"task `{task_id}` is not in {config.paths.tasks.name}: evaluated without its minimum, "
        "expected tool or type"
        for task_id in sorted(unknown)
    )
    return contexts, notes


def errored_note(errored: Sequence[ErroredAttempt]) -> str:
    """The report's first note: the attempts left out as infrastructure failures, and what to do."""
    tasks = sorted({item.task_id for item in errored})
    return (
        f"{len(errored)} attempt(s) errored ({', '.join(f'`{task}`' for task in tasks)}): the server "
        "not started or not connected, or the agent, its runner or its model failed; an infrastructure "
        f"failure, not evaluated and in no figure. First reason: {errored[0].reason}. Trace them in a "
        "new run (`doit loop --new-run`); a server that is slow to start gets more time with "
        "server.health.timeout_s"
    )


def _phase1_provider(run_dir: RunDir, contexts: list[TraceContext], config: Config) -> str:
    providers = sorted({ctx.trace.provider for ctx in contexts})
    if providers:
        return ", ".join(providers)
    if run_dir.manifest.exists():
        return load_manifest(run_dir).providers.phase1
    return str(config.providers.phase1)


def evaluate_run(config: Config, run_dir: RunDir | str | Path, *, notes: Sequence[str] = ()) -> BugReport:
    """Evaluate a run's traces, write bug_report.json and phase2_narrative.md into it, return the report.

    `notes` come first among the report's notes (what the caller knows of the
    run, such as the attempts it lacks).

    The evaluating model is the config's `providers.phase2`: a flag or caller
    that picks another applies it when the config is loaded
    (`ConfigOverrides.providers`), so the model recorded with the run and the
    one used here cannot differ.
    """
    run = run_dir if isinstance(run_dir, RunDir) else RunDir(Path(run_dir))
    if not run.root.is_dir():
        raise UserError(f"{run.root}: no such run folder")
    baseline = read_model(run.baseline, Baseline) if run.baseline.exists() else None
    spec = config.providers.phase2
    # Every trace of the run is held in memory (a thousand traces are millions of objects) and
    # traces, sightings and reports hold no reference cycles; on 1,000 traces the collector's
    # fruitless walks were a third of the reading time.
    with collector_paused():
        errored: list[ErroredAttempt] = []
        contexts, found = load_contexts(config, run, baseline, errored)
        notes = [*([errored_note(errored)] if errored else []), *notes, *found]
        if baseline is None:
            notes.append(
                f"no baseline at {run.baseline}: answers were not checked (run `mcpipechekr baseline`)"
            )
        elif stale := stale_baseline_note(run, baseline, [ctx.trace.task_id for ctx in contexts]):
            notes.append(stale)
        if not contexts and not errored:
            notes.append(f"no traces in {run.traces}: nothing to evaluate (run `mcpipechekr run` first)")
        report, outcomes = evaluate_contexts(
            contexts,
            run_id=run.run_id,
            phase1_provider=_phase1_provider(run, contexts, config),
            threshold=config.thresholds.open_ended_divergence,
            notes=notes,
            judge=None if spec.is_demo else AnswerJudge.for_provider(spec, config),
        )
        report.errored = errored
        traces = len(contexts)
        prompt = None if spec.is_demo else digest(contexts, baseline, report)
        del contexts, outcomes  # the traces go now, before the collector is back and would walk them
    intro = None
    if prompt is not None:
        answer = ask_evaluator(spec, config, prompt)
        added, more_notes = llm_bugs(answer.bugs, {bug.id for bug in report.bugs})
        report = report.model_copy(
            update={
                "phase2_provider": str(spec),
                "bugs": sort_bugs([*report.bugs, *added]),
                "notes": [*report.notes, *more_notes],
            }
        )
        report = BugReport.model_validate(report.model_dump())
        intro = answer.narrative
    write_evaluation(run, report, render_narrative(report, traces=traces, intro=intro))
    return report


def write_evaluation(run_dir: RunDir, report: BugReport, narrative: str) -> None:
    """bug_report.json, then phase2_narrative.md, each written atomically."""
    write_model(run_dir.bug_report, report)
    atomic_write_text(run_dir.phase2_narrative, narrative)
