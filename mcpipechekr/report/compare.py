"""`mcpipechekr compare RUN_A RUN_B`: is run B better than run A, and by tests that small counts allow?

The two runs are the server before and after a fix, or two models on one
server. Everything is read from what each run already holds: the manifest
(what ran), bug_report.json (the answers counted per task, and the bugs by
their stable ids) and traces/ (calls and tokens of every attempt). Nothing is
run and nothing is written into the runs.

Per task, matched by id:

- success: Fisher's exact test on the successes and failures of A and B
  (`compare_stats.fisher_exact`, two-sided); answers nobody could check are
  left out, as evaluate leaves them out of the success rate;
- calls and tokens per attempt: the difference of the means (B − A) with a
  95% percentile bootstrap interval (`compare_stats.bootstrap_mean_difference`,
  seeded, so the same runs always give the same figures), counted the way
  evaluate counts them (`costing.trace_tokens`);
- the verdict: a significant success rate decides; otherwise calls and tokens
  do, fewer being better (`mixed` when one went down and the other up); a
  task in one run only is listed but not compared.

Bugs are matched by id: evaluate makes ids from the defect, not the run
(`artifacts/bug_report.py`), so the same defect has the same id in both. A bug
of A absent from B is `fixed` only if B answered one of the tasks it was seen
in; otherwise B could not have seen it, and it is `not_compared`, "not seen
(no answered attempt)" (likewise `new`). Traces recorded `errored` (the agent
never had a working server) are no answers: they are counted apart and left
out of every figure.

The run's verdict is never `better` while success fell in a split, and there
is none (`not_like_for_like`) when the runs differ in more than the server:
what ran the agent (the traces' runner), a phase's model, tasks.yaml, or a
setting that changes how attempts are made or judged; each is named in
`changes`.

Blind spots: a run's several Phase 1 models are pooled per task (the manifest
says which), a task with fewer calls and the same success rate counts as
better even when the agent gave up sooner, and a fixed bug is counted on its
id alone, whatever the task statistics say.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from mcpipechekr.artifacts.atomic import read_model
from mcpipechekr.artifacts.bug_report import Bug, BugReport, TaskStats
from mcpipechekr.artifacts.comparison import (
    BugComparison,
    ComparedRun,
    Comparison,
    ComparisonSummary,
    MeanComparison,
    Metric,
    RunVerdict,
    SplitComparison,
    SuccessCounts,
    TaskComparison,
    TaskVerdict,
)
from mcpipechekr.artifacts.manifest import Manifest
from mcpipechekr.artifacts.rundir import RunDir
from mcpipechekr.artifacts.runstate import load_manifest
from mcpipechekr.artifacts.trace import ToolCall, list_traces, read_trace
from mcpipechekr.before_after import Split, SplitFigures, split_trend, split_warnings
from mcpipechekr.errors import UserError
from mcpipechekr.evaluate.costing import trace_tokens
from mcpipechekr.evaluate.orchestrate import INFRASTRUCTURE_FAILURES
from mcpipechekr.kpi import read_kpis
from mcpipechekr.report.compare_stats import MeanDifference, bootstrap_mean_difference, fisher_exact

ALPHA = 0.05
RESAMPLES = 2000
SEED = "mcpipechekr-compare"
MIN_ATTEMPTS = 2
"""Fewest attempts per run before a difference of calls or tokens may be called significant."""


@dataclass
class ComparedRunData:
    """What a comparison reads of one run."""

    run: RunDir
    manifest: Manifest
    report: BugReport
    attempts: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    """Task id -> (tool calls, tokens) of each of its answered traces."""
    errored: dict[str, int] = field(default_factory=dict)
    """Task id -> its traces recorded `errored`: no answer, so in no figure."""
    runners: set[str] = field(default_factory=set)
    warnings: list[str] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return self.manifest.run_id


def load_compared_run(run: RunDir) -> ComparedRunData:
    """A run's manifest, bug report and per-attempt figures; a folder that is no evaluated run is refused."""
    root = run.root
    if not root.is_dir():
        raise UserError(f"{root}: no such run folder")
    if not run.manifest.is_file():
        raise UserError(
            f"{root}: not a run folder (it has no manifest.json); give a run id (run-YYYYMMDD-NNN), "
            "`latest`, or a folder under runs/"
        )
    manifest = load_manifest(run)
    if not run.bug_report.is_file():
        raise UserError(
            f"{root}: the run has no bug_report.json to compare; run `mcpipechekr evaluate "
            f"{manifest.run_id}` first"
        )
    report = read_model(run.bug_report, BugReport)
    data = ComparedRunData(run=run, manifest=manifest, report=report)
    for path in list_traces(run):
        try:
            trace = read_trace(path)
        except UserError as exc:
            data.warnings.append(f"{manifest.run_id}: {path.name} was skipped: {exc.message.splitlines()[0]}")
            continue
        if trace.status in INFRASTRUCTURE_FAILURES or trace.cut_by_harness:
            data.errored[trace.task_id] = data.errored.get(trace.task_id, 0) + 1
            continue
        calls = sum(1 for step in trace.steps if isinstance(step, ToolCall))
        data.attempts.setdefault(trace.task_id, []).append((calls, trace_tokens(trace)[0]))
        data.runners.add(trace.runner)
    for task_id, stats in sorted(_task_stats(report).items()):
        traced = len(data.attempts.get(task_id, []))
        if traced != stats.runs:
            data.warnings.append(
                f"{manifest.run_id}: bug_report.json counts {stats.runs} attempt(s) of `{task_id}` but "
                f"traces/ holds {traced}; run `mcpipechekr evaluate {manifest.run_id}` again"
            )
    return data


def _task_stats(report: BugReport) -> dict[str, TaskStats]:
    """A report's statistics per task; a run that compared several models has one row per model,
    which are pooled here (counts summed)."""
    pooled: dict[str, TaskStats] = {}
    for stats in report.tasks:
        seen = pooled.get(stats.task_id)
        if seen is None:
            pooled[stats.task_id] = stats
            continue
        pooled[stats.task_id] = seen.model_copy(
            update={
                "runs": seen.runs + stats.runs,
                "successes": seen.successes + stats.successes,
                "undecided": seen.undecided + stats.undecided,
            }
        )
    return pooled


def _counts(stats: TaskStats) -> SuccessCounts:
    decided = stats.runs - stats.undecided
    return SuccessCounts(
        runs=stats.runs,
        successes=stats.successes,
        failures=decided - stats.successes,
        undecided=stats.undecided,
        rate=stats.successes / decided if decided else None,
    )


def _mean_comparison(
    values_a: list[int], values_b: list[int], *, seed: str, resamples: int
) -> MeanComparison | None:
    if not values_a or not values_b:
        return None
    found: MeanDifference = bootstrap_mean_difference(
        [float(v) for v in values_a], [float(v) for v in values_b], seed=seed, resamples=resamples
    )
    enough = len(values_a) >= MIN_ATTEMPTS and len(values_b) >= MIN_ATTEMPTS
    return MeanComparison(
        mean_a=round(found.mean_a, 3),
        mean_b=round(found.mean_b, 3),
        difference=round(found.difference, 3),
        low=round(found.low, 3),
        high=round(found.high, 3),
        significant=enough and found.excludes_zero,
    )


def _rate(counts: SuccessCounts) -> str:
    return f"{counts.successes}/{counts.successes + counts.failures}"


def _p(p_value: float) -> str:
    return f"{p_value:.2g}" if p_value < 0.001 else f"{p_value:.3f}"


def _compare_task(
    task_id: str,
    a: ComparedRunData,
    b: ComparedRunData,
    stats_a: TaskStats,
    stats_b: TaskStats,
    *,
    alpha: float,
    resamples: int,
    seed: str,
) -> TaskComparison:
    counts_a, counts_b = _counts(stats_a), _counts(stats_b)
    p_value = None
    if counts_a.rate is not None and counts_b.rate is not None:
        p_value = fisher_exact(counts_a.successes, counts_a.failures, counts_b.successes, counts_b.failures)
    attempts_a, attempts_b = a.attempts.get(task_id, []), b.attempts.get(task_id, [])
    calls = _mean_comparison(
        [c for c, _ in attempts_a],
        [c for c, _ in attempts_b],
        seed=f"{seed}:{task_id}:calls",
        resamples=resamples,
    )
    tokens = _mean_comparison(
        [t for _, t in attempts_a],
        [t for _, t in attempts_b],
        seed=f"{seed}:{task_id}:tokens",
        resamples=resamples,
    )
    changed: list[Metric] = []
    verdict: TaskVerdict = "no_significant_difference"
    if p_value is None:
        success_text = "success not tested (a run has no checked or judged answer)"
    else:
        success_text = f"success {_rate(counts_a)} → {_rate(counts_b)} (Fisher p = {_p(p_value)})"
    reason = success_text
    if p_value is not None and p_value < alpha:
        changed.append("success")
        verdict = "better" if (counts_b.rate or 0) > (counts_a.rate or 0) else "worse"
    directions: set[TaskVerdict] = set()
    efficiency = []
    measures: tuple[tuple[Metric, MeanComparison | None], ...] = (("calls", calls), ("tokens", tokens))
    for name, measure in measures:
        if measure is not None and measure.significant:
            changed.append(name)
            directions.add("better" if measure.difference < 0 else "worse")
            efficiency.append(
                f"{name} {measure.mean_a:g} → {measure.mean_b:g} per attempt "
                f"(95% CI of the difference {measure.low:+g} to {measure.high:+g})"
            )
    if "success" not in changed and directions:
        verdict = "mixed" if len(directions) > 1 else directions.pop()
    if efficiency:
        reason += "; " + "; ".join(efficiency)
    if not changed:
        reason += "; calls and tokens: no significant difference"
    return TaskComparison(
        task_id=task_id,
        present_in="both",
        split=stats_b.split,
        success_a=counts_a,
        success_b=counts_b,
        p_value=p_value,
        calls=calls,
        tokens=tokens,
        changed=changed,
        verdict=verdict,
        reason=reason,
    )


def _run_side(data: ComparedRunData) -> ComparedRun:
    manifest = data.manifest
    return ComparedRun(
        run_id=manifest.run_id,
        server=manifest.server.name,
        server_sha=manifest.mcp_server_sha,
        server_dirty=manifest.mcp_server_dirty,
        phase1_provider=data.report.phase1_provider,
        task_file_hash=manifest.task_file_hash,
        harness_version=manifest.harness_version,
        tasks=len(_task_stats(data.report)),
        attempts=sum(len(found) for found in data.attempts.values()),
        errored=sum(data.errored.values()),
        runners=sorted(data.runners),
        bugs=len(data.report.bugs),
    )


def _short(sha: str | None, dirty: bool) -> str:
    text = sha[:12] if sha else "unknown"
    return text + " (dirty)" if dirty else text


def _changes(a: ComparedRun, b: ComparedRun, ma: Manifest, mb: Manifest) -> tuple[list[str], list[str]]:
    """What differs between the two runs: every change, and of them those that make the runs no
    like-for-like comparison of the server (what ran the agent, a model, the tasks, a setting)."""
    changes, unlike = [], []
    if (a.server_sha, a.server_dirty) != (b.server_sha, b.server_dirty):
        changes.append(
            f"server source: {_short(a.server_sha, a.server_dirty)} → {_short(b.server_sha, b.server_dirty)}"
        )
    if ma.server != mb.server:
        where_a = ma.server.command or ma.server.url
        where_b = mb.server.command or mb.server.url
        changes.append(f"server: {ma.server.name} ({where_a}) → {mb.server.name} ({where_b})")
    ran_a, ran_b = _runner_of(ma, a), _runner_of(mb, b)
    if ran_a != ran_b and ran_a and ran_b:
        unlike.append(f"agent runner: {ran_a} → {ran_b}")
    if a.phase1_provider != b.phase1_provider:
        unlike.append(f"Phase 1 model: {a.phase1_provider} → {b.phase1_provider}")
    for phase in ("phase0", "phase2"):
        before, after = getattr(ma.providers, phase), getattr(mb.providers, phase)
        if before != after and before is not None and after is not None:
            unlike.append(f"{phase} model: {before} → {after}")
    if a.task_file_hash != b.task_file_hash:
        unlike.append("tasks.yaml: changed between the runs (task definitions may differ)")
    unlike += [f"config {key}: {old} → {new}" for key, old, new in _config_changes(ma.config, mb.config)]
    if a.harness_version != b.harness_version:
        changes.append(f"MCPipeChekr: {a.harness_version} → {b.harness_version}")
    return [*changes, *unlike], unlike


def _runner_of(manifest: Manifest, side: ComparedRun) -> str:
    """What ran the agent, with its version when the manifest recorded it; else the traces' runners."""
    if manifest.runner:
        return manifest.runner + (f" ({manifest.runner_version})" if manifest.runner_version else "")
    return ", ".join(side.runners)


IGNORED_SETTINGS = ("server.", "paths.", "fix.", "providers.phase3", "providers.phase05", "check.")
"""Settings that change nothing an attempt is measured by: the server (its change is the point), where
files go, the fix step, and the phases that run no attempt."""


def _config_changes(before: dict, after: dict) -> list[tuple[str, str, str]]:
    """(dotted key, A's value, B's value) of each setting that differs, the ignored ones left out."""
    flat_a, flat_b = _flatten(before), _flatten(after)
    out = []
    for key in sorted(flat_a.keys() | flat_b.keys()):
        if key.startswith(IGNORED_SETTINGS) or key in (
            "providers.phase0",
            "providers.phase1",
            "providers.phase2",
        ):
            continue
        old, new = flat_a.get(key, "(unset)"), flat_b.get(key, "(unset)")
        if old != new:
            out.append((key, str(old), str(new)))
    return out


def _flatten(value: object, prefix: str = "") -> dict[str, object]:
    if isinstance(value, dict):
        out: dict[str, object] = {}
        for key, inner in value.items():
            out.update(_flatten(inner, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): value}


def _warnings(a: ComparedRunData, b: ComparedRunData, only_a: list[str], only_b: list[str]) -> list[str]:
    warnings = [*a.warnings, *b.warnings]
    if a.run.root.resolve() == b.run.root.resolve():
        warnings.append(f"{a.run_id} is compared with itself: every difference is 0")
    if (
        a.manifest.server.name != b.manifest.server.name
        or a.manifest.server.transport != b.manifest.server.transport
    ):
        warnings.append(
            f"the runs tested different servers ({a.manifest.server.name} in {a.run_id}, "
            f"{b.manifest.server.name} in {b.run_id}): only their common tasks are compared"
        )
    if only_a or only_b:
        parts = []
        if only_a:
            parts.append(f"only in {a.run_id}: {', '.join(only_a)}")
        if only_b:
            parts.append(f"only in {b.run_id}: {', '.join(only_b)}")
        warnings.append(
            "the runs have different task sets (" + "; ".join(parts) + "): the common tasks are compared"
        )
    for data in (a, b):
        if data.errored:
            warnings.append(
                f"{data.run_id} has {_plural(sum(data.errored.values()), 'errored attempt')} (the agent "
                f"never had a working server: {', '.join(sorted(data.errored))}): left out of every "
                "figure, and no bug counts as fixed or new by them"
            )
        providers = {stats.provider for stats in data.report.tasks if stats.provider}
        if len(providers) > 1:
            warnings.append(
                f"{data.run_id} ran several Phase 1 models ({', '.join(sorted(providers))}): their attempts "
                "are pooled per task"
            )
    return warnings


def _bug_row(
    bug_id: str, bug_a: Bug | None, bug_b: Bug | None, tasks_a: set[str], tasks_b: set[str]
) -> BugComparison:
    shown = bug_b or bug_a
    assert shown is not None
    seen_in = set(shown.task_ids or ([shown.task_id] if shown.task_id else []))
    if bug_a is not None and bug_b is not None:
        status = "unchanged"
    elif bug_a is not None:
        status = "fixed" if not seen_in or seen_in & tasks_b else "not_compared"
    else:
        status = "new" if not seen_in or seen_in & tasks_a else "not_compared"
    return BugComparison(
        id=bug_id,
        status=status,
        type=shown.type,
        severity=shown.severity,
        tool=shown.tool,
        fixable_by=shown.fixable_by,
        occurrences_a=bug_a.occurrences if bug_a else 0,
        occurrences_b=bug_b.occurrences if bug_b else 0,
        token_cost_of_gap_a=bug_a.token_cost_of_gap if bug_a else None,
        token_cost_of_gap_b=bug_b.token_cost_of_gap if bug_b else None,
    )


def _answered(data: ComparedRunData, stats: dict[str, TaskStats]) -> set[str]:
    """The tasks the run has an answered attempt of: only those could show a bug, or its absence."""
    return {task_id for task_id, found in stats.items() if found.runs > 0 and data.attempts.get(task_id)}


_BUG_ORDER = {"fixed": 0, "new": 1, "unchanged": 2, "not_compared": 3}


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _verdict(summary: ComparisonSummary, unlike: list[str], fell: list[str]) -> tuple[RunVerdict, str]:
    """The run's verdict: never `better` while success fell in a split, and none at all when the runs
    differ in more than the server (what ran the agent, a model, the tasks, a setting)."""
    good = summary.tasks_better > 0 or summary.bugs_fixed > 0
    bad = summary.tasks_worse > 0 or summary.bugs_new > 0 or bool(fell)
    verdict: RunVerdict = (
        "mixed" if good and bad else "better" if good else "worse" if bad else "no_significant_difference"
    )
    if unlike:
        verdict = "not_like_for_like"
    head = {
        "better": "B is better",
        "worse": "B is worse",
        "mixed": "Mixed",
        "no_significant_difference": "No significant difference",
        "not_like_for_like": "No verdict, the runs are not like for like (" + "; ".join(unlike) + ")",
    }[verdict]
    tasks = f"{_plural(summary.tasks_better, 'task')} improved significantly, {summary.tasks_worse} worse"
    line = f"{head}: {tasks}; {_plural(summary.bugs_fixed, 'bug')} fixed, {summary.bugs_new} new"
    if fell:
        line += "; success fell in " + ", ".join(fell)
    if summary.bugs_not_compared:
        line += f"; {summary.bugs_not_compared} not seen (no answered attempt)"
    return verdict, line


def _success_fell(a: ComparedRunData, b: ComparedRunData) -> list[str]:
    """The splits whose success rate over the decided answers is lower in B: `train 5/7 → 4/7`."""
    fell = []
    for split in ("train", "holdout"):
        before, after = SplitFigures(a.report, split), SplitFigures(b.report, split)
        if before.rate is not None and after.rate is not None and after.rate < before.rate - 1e-9:
            fell.append(f"{split} {before.successes}/{before.decided} → {after.successes}/{after.decided}")
    return fell


def _split_side(
    split: Split, tasks: list[TaskComparison], figures_a: SplitFigures, figures_b: SplitFigures
) -> SplitComparison:
    compared = [task for task in tasks if task.split == split and task.present_in == "both"]
    counts = {verdict: sum(1 for task in compared if task.verdict == verdict) for verdict in _TASK_VERDICTS}
    return SplitComparison(
        split=split,
        tasks_compared=len(compared),
        tasks_better=counts["better"],
        tasks_worse=counts["worse"],
        tasks_mixed=counts["mixed"],
        tasks_unchanged=counts["no_significant_difference"],
        successes_a=figures_a.successes,
        decided_a=figures_a.decided,
        rate_a=figures_a.rate,
        successes_b=figures_b.successes,
        decided_b=figures_b.decided,
        rate_b=figures_b.rate,
        mean_calls_a=_rounded(figures_a.calls),
        mean_calls_b=_rounded(figures_b.calls),
        mean_tokens_a=_rounded(figures_a.tokens),
        mean_tokens_b=_rounded(figures_b.tokens),
        trend=split_trend(figures_a, figures_b),
    )


_TASK_VERDICTS = ("better", "worse", "mixed", "no_significant_difference")


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _splits(
    a: ComparedRunData, b: ComparedRunData, tasks: list[TaskComparison]
) -> tuple[list[SplitComparison], list[str]]:
    """Train and holdout side by side, and the session summary's warnings; nothing without a holdout task.

    The figures are each run's bug report over all the tasks of a split (as
    the session summary counts them), the task counts those of the tasks in
    both runs.
    """
    if not any(stats.split == "holdout" for report in (a.report, b.report) for stats in report.tasks):
        return [], []
    figures = {
        split: (SplitFigures(a.report, split), SplitFigures(b.report, split))
        for split in ("train", "holdout")
    }
    sides = [_split_side(split, tasks, *figures[split]) for split in ("train", "holdout")]
    warned = split_warnings(f"from {a.run_id} to {b.run_id}", *figures["train"], *figures["holdout"])
    return sides, [f"{warning.title} {warning.detail}" for warning in warned]


def compare_runs(
    run_a: RunDir | Path,
    run_b: RunDir | Path,
    *,
    alpha: float = ALPHA,
    resamples: int = RESAMPLES,
    seed: str = SEED,
) -> Comparison:
    """Compare run B with run A: per task, per bug, and a verdict. Reads the runs, writes nothing."""
    a = load_compared_run(run_a if isinstance(run_a, RunDir) else RunDir(Path(run_a)))
    dir_a = run_a if isinstance(run_a, RunDir) else RunDir(Path(run_a))
    dir_b = run_b if isinstance(run_b, RunDir) else RunDir(Path(run_b))
    a, b = load_compared_run(dir_a), load_compared_run(dir_b)
    comparison = comparison_of(a, b, alpha=alpha, resamples=resamples, seed=seed)
    return comparison.model_copy(update={"kpis_a": read_kpis(dir_a), "kpis_b": read_kpis(dir_b)})


def comparison_of(
    a: ComparedRunData,
    b: ComparedRunData,
    *,
    alpha: float = ALPHA,
    resamples: int = RESAMPLES,
    seed: str = SEED,
) -> Comparison:
    """The comparison of two loaded runs (see `compare_runs`)."""
    stats_a, stats_b = _task_stats(a.report), _task_stats(b.report)
    only_a = sorted(stats_a.keys() - stats_b.keys())
    only_b = sorted(stats_b.keys() - stats_a.keys())
    tasks: list[TaskComparison] = []
    for task_id in sorted(stats_a.keys() | stats_b.keys()):
        if task_id in stats_a and task_id in stats_b:
            tasks.append(
                _compare_task(
                    task_id,
                    a,
                    b,
                    stats_a[task_id],
                    stats_b[task_id],
                    alpha=alpha,
                    resamples=resamples,
                    seed=seed,
                )
            )
            continue
        side = "a" if task_id in stats_a else "b"
        stats = stats_a.get(task_id) or stats_b[task_id]
        run_id = a.run_id if side == "a" else b.run_id
        tasks.append(
            TaskComparison(
                task_id=task_id,
                present_in=side,
                split=stats.split,
                success_a=_counts(stats) if side == "a" else None,
                success_b=_counts(stats) if side == "b" else None,
                verdict="not_compared",
                reason=f"ran in {run_id} only",
            )
        )
    bugs_a = {bug.id: bug for bug in a.report.bugs}
    bugs_b = {bug.id: bug for bug in b.report.bugs}
    bugs = sorted(
        (
            _bug_row(
                bug_id, bugs_a.get(bug_id), bugs_b.get(bug_id), _answered(a, stats_a), _answered(b, stats_b)
            )
            for bug_id in bugs_a.keys() | bugs_b.keys()
        ),
        key=lambda row: (_BUG_ORDER[row.status], row.id),
    )
    verdicts: dict[str, int] = defaultdict(int)
    for task in tasks:
        verdicts[task.verdict] += 1
    statuses: dict[str, int] = defaultdict(int)
    for bug in bugs:
        statuses[bug.status] += 1
    summary = ComparisonSummary(
        tasks_compared=sum(1 for task in tasks if task.present_in == "both"),
        tasks_better=verdicts["better"],
        tasks_worse=verdicts["worse"],
        tasks_mixed=verdicts["mixed"],
        tasks_only_a=len(only_a),
        tasks_only_b=len(only_b),
        bugs_fixed=statuses["fixed"],
        bugs_new=statuses["new"],
        bugs_unchanged=statuses["unchanged"],
        bugs_not_compared=statuses["not_compared"],
    )
    splits, warned = _splits(a, b, tasks)
    side_a, side_b = _run_side(a), _run_side(b)
    changes, unlike = _changes(side_a, side_b, a.manifest, b.manifest)
    verdict, line = _verdict(summary, unlike, _success_fell(a, b))
    return Comparison(
        a=side_a,
        b=side_b,
        alpha=alpha,
        bootstrap_resamples=resamples,
        bootstrap_seed=seed,
        changes=changes,
        warnings=_warnings(a, b, only_a, only_b),
        tasks=tasks,
        bugs=bugs,
        summary=summary,
        splits=splits,
        split_warnings=warned,
        verdict=verdict,
        verdict_line=line,
    )
