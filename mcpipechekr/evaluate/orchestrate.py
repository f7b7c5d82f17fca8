"""Phase 2: evaluate a run's traces into bug_report.json and phase2_narrative.md.

`evaluate_run` reads the run's traces, the task file and the shared baseline,
runs every analyzer on every trace (an analyzer that raises is recorded in the
report's notes, and the rest go on), checks each final answer against the
baseline, prices the sightings, merges them into bugs and computes per-task
statistics. Nothing here depends on the clock except `evaluated_at`, so
evaluating the same run twice writes the same report apart from that field.

A run's success criterion per trace: the trace completed and its answer
passed the correctness check (a deterministic match; an open-ended answer not
flagged for review). Without a baseline every completed trace counts as a
success and the report says correctness was not checked.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mcpipechekr._util.collector import collector_paused
from mcpipechekr.artifacts import RunDir, read_model, read_trace, utc_now, write_model
from mcpipechekr.artifacts.atomic import atomic_write_text
from mcpipechekr.artifacts.baseline import Baseline
from mcpipechekr.artifacts.bug_report import BugReport, ReviewFlag, TaskStats
from mcpipechekr.artifacts.manifest import Manifest
from mcpipechekr.artifacts.tools_snapshot import ToolsSnapshot
from mcpipechekr.artifacts.trace import list_traces
from mcpipechekr.config import Config
from mcpipechekr.errors import UserError
from mcpipechekr.evaluate.aggregate import Occurrence, drop_explained, merge, sort_bugs
from mcpipechekr.evaluate.base import Analyzer, Budgets, BugSighting, TraceContext
from mcpipechekr.evaluate.call_count import CallCount
from mcpipechekr.evaluate.correctness import check_deterministic, similarity
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


def _correctness(ctx: TraceContext, threshold: float) -> tuple[bool, BugSighting | None, ReviewFlag | None]:
    """(answer acceptable, a correctness sighting, a review flag) against the baseline."""
    trace, task, entry = ctx.trace, ctx.task, ctx.baseline
    if trace.status != "completed":
        return False, None, None
    if entry is None or task is None:
        return True, None, None
    if task.task_type == "open_ended":
        score = similarity(trace.final_answer, entry.result)
        divergence = 1.0 - score
        if divergence <= threshold:
            return True, None, None
        flag = ReviewFlag(
            task_id=trace.task_id,
            trace=ctx.trace_ref,
            similarity=round(score, 4),
            divergence=round(divergence, 4),
            reason=f"the answer diverges {divergence:.0%} from the baseline (threshold {threshold:.0%})",
        )
        return False, None, flag
    verdict = check_deterministic(trace.final_answer, entry.result)
    if verdict.correct:
        return True, None, None
    last = ctx.trace.steps[-1].index if ctx.trace.steps else None
    spent = sum(ctx.call_tokens.values())
    sighting = BugSighting(
        type="correctness",
        slug=("wrong-answer", trace.task_id),
        severity="high",
        tool=task.expected_tool,
        trigger=f"answering task `{trace.task_id}`",
        observed=f"the final answer {verdict.reason}"
        + (f": {', '.join(verdict.missing[:5])} not found" if verdict.missing else ""),
        expected="the answer names the baseline's values (runs/baseline.json)",
        acceptance_criteria=[
            f"an agent's answer to `{trace.task_id}` names "
            + (", ".join(verdict.missing[:5]) or "the baseline values")
        ],
        steps=[last] if last is not None else [],
        observed_tokens=spent,
        optimal_tokens=min(spent, entry.reference_tokens) if entry.reference_tokens is not None else spent,
        details={"missing": verdict.missing[:20]},
        analyzer="correctness",
    )
    return False, sighting, None


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
    success, wrong, flag = _correctness(ctx, threshold)
    if wrong is not None:
        sightings.append(wrong)
    return TraceOutcome(ctx, success, sightings, flag), notes


PARALLEL_FROM = 256
"""Runs with at least this many traces are analysed by forked worker processes (one per core, up to 8)."""
PARALLEL_MIN_CORES = 4
"""Fewer cores than this: serial. On two busy cores the workers only fight each other."""

_WORK: tuple[list[TraceContext], Sequence[Analyzer], float] | None = None


def _evaluate_chunk(
    bounds: tuple[int, int],
) -> list[tuple[list[BugSighting], bool, ReviewFlag | None, list[str]]]:
    assert _WORK is not None
    contexts, analyzers, threshold = _WORK
    out = []
    for ctx in contexts[bounds[0] : bounds[1]]:
        outcome, notes = evaluate_trace(ctx, analyzers, threshold)
        out.append((outcome.sightings, outcome.success, outcome.flag, notes))
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
        (TraceOutcome(ctx, success, sightings, flag), notes)
        for ctx, (sightings, success, flag, notes) in zip(contexts, results, strict=True)
    ]


def task_stats(outcomes: list[TraceOutcome], k: int = DEFAULT_K) -> list[TaskStats]:
    """Per task and provider: success rate with its Wilson interval, pass@k, pass^k, calls and tokens."""
    groups: dict[tuple[str, str], list[TraceOutcome]] = {}
    for outcome in outcomes:
        groups.setdefault((outcome.ctx.trace.task_id, outcome.ctx.trace.provider), []).append(outcome)
    stats = []
    for (task_id, provider), group in sorted(groups.items()):
        runs = len(group)
        successes = sum(outcome.success for outcome in group)
        low, high = wilson_interval(successes, runs)
        kk = max(1, min(k, runs))
        ctx = group[0].ctx
        minimum = ctx.min_calls
        mean_calls = sum(len(outcome.ctx.calls) for outcome in group) / runs
        tokens = [trace_tokens(outcome.ctx.trace) for outcome in group]
        sources = {source for _, source in tokens}
        reference = ctx.baseline.reference_tokens if ctx.baseline else None
        won = [sum(outcome.ctx.call_tokens.values()) for outcome in group if outcome.success]
        mean_won = sum(won) / len(won) if won else None
        stats.append(
            TaskStats(
                task_id=task_id,
                provider=provider,
                runs=runs,
                successes=successes,
                success_rate=successes / runs,
                wilson_low=round(low, 4),
                wilson_high=round(high, 4),
                k=kk,
                pass_at_k=round(pass_at_k(runs, successes, kk), 4),
                pass_hat_k=round(pass_hat_k(runs, successes, kk), 4),
                efficiency_ratio=round(reference / mean_won, 4)
                if reference is not None and mean_won
                else None,
                min_calls=minimum,
                mean_calls=round(mean_calls, 3),
                call_ratio=round(mean_calls / minimum, 3) if minimum else None,
                mean_tokens_observed=round(sum(count for count, _ in tokens) / runs, 1),
                tokens_source=sources.pop() if len(sources) == 1 else "mixed",
                token_cost_optimal=reference,
            )
        )
    return stats


def evaluate_contexts(
    contexts: list[TraceContext],
    *,
    run_id: str,
    phase1_provider: str,
    threshold: float,
    analyzers: Sequence[Analyzer] | None = None,
    notes: Sequence[str] = (),
) -> tuple[BugReport, list[TraceOutcome]]:
    """The analyzer's bug report for traces already read (no model involved)."""
    chosen = list(analyzers) if analyzers is not None else default_analyzers()
    outcomes: list[TraceOutcome] = []
    all_notes = list(notes)
    occurrences: list[Occurrence] = []
    for ctx, (outcome, trace_notes) in zip(contexts, _evaluate_all(contexts, chosen, threshold), strict=True):
        outcomes.append(outcome)
        all_notes.extend(trace_notes)
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
    report.notes.extend(beaten_minimums(report.tasks))
    return report, outcomes


def beaten_minimums(stats: Sequence[TaskStats]) -> list[str]:
    """A note per task whose traces did better than the known minimum (call ratio below 1, or
    efficiency above 1): the figures stay as measured, and the note says what they mean.

    Such a trace is no agent's feat: the minimum it beats is stale (made for the server
    before a fix changed its tools) or was never minimal (reference calls that take a detour).
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


def load_contexts(
    config: Config, run_dir: RunDir, baseline: Baseline | None
) -> tuple[list[TraceContext], list[str]]:
    """The run's traces with their tasks and baseline entries; unreadable traces become notes."""
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


def _phase1_provider(run_dir: RunDir, contexts: list[TraceContext], config: Config) -> str:
    providers = sorted({ctx.trace.provider for ctx in contexts})
    if providers:
        return ", ".join(providers)
    if run_dir.manifest.exists():
        return read_model(run_dir.manifest, Manifest).providers.phase1
    return str(config.providers.phase1)


def evaluate_run(config: Config, run_dir: RunDir | str | Path) -> BugReport:
    """Evaluate a run's traces, write bug_report.json and phase2_narrative.md into it, return the report.

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
        contexts, notes = load_contexts(config, run, baseline)
        if baseline is None:
            notes.append(
                f"no baseline at {run.baseline}: answers were not checked (run `mcpipechekr baseline`)"
            )
        elif stale := stale_baseline_note(run, baseline, [ctx.trace.task_id for ctx in contexts]):
            notes.append(stale)
        if not contexts:
            notes.append(f"no traces in {run.traces}: nothing to evaluate (run `mcpipechekr run` first)")
        report, outcomes = evaluate_contexts(
            contexts,
            run_id=run.run_id,
            phase1_provider=_phase1_provider(run, contexts, config),
            threshold=config.thresholds.open_ended_divergence,
            notes=notes,
        )
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
