"""session_summary.md: what a loop session did, for the person who ends it.

Written when the reviewer exits or exports the bugs as issues: which runs ran (tasks, models, server commit),
why the loop ended, each run's key figures against their targets (kpi.json), what each found,
what the fix loop committed or could not fix, and what the agents' work cost in tokens. It is
built only from the run folders' artifacts (manifest.json, bug_report.json, kpi.json,
review.json, fix.json), so it can be rewritten
at any time from the same runs with the same result, apart from its date line.

A run folder that lacks an artifact (a run stopped at the lint gate, a run never
reviewed) is reported as such rather than skipped, so the summary never makes
a session look more complete than it was. Comparing consecutive runs shows
which bugs went away and which appeared, the plain evidence that a fix worked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from mcpipechekr import __version__
from mcpipechekr.artifacts import (
    BugReport,
    FixRecord,
    Manifest,
    Review,
    RunDir,
    atomic_write_text,
    read_model,
    utc_now,
)
from mcpipechekr.artifacts.kpi import KpiFigure
from mcpipechekr.artifacts.runstate import load_manifest
from mcpipechekr.before_after import SplitFigures, compare_runs, split_trend, split_warnings
from mcpipechekr.errors import UserError
from mcpipechekr.kpi import LABELS, format_value, read_kpis, status_text, target_text, trend_text


def write_session_summary(
    runs: Sequence[RunDir], path: str | Path, *, regressions: Iterable[str] = (), ending: str | None = None
) -> Path:
    """Write the Markdown summary of ``runs`` (oldest first) to ``path`` atomically; returns the path.

    ``regressions`` are lines from whoever compared the runs with earlier
    findings (e.g. a fixed problem seen again); they get a section of their own.
    ``ending`` is why the loop ended and after how many iterations (None when
    no loop ended the session).
    """
    text = render_session_summary(runs, regressions=regressions, ending=ending)
    return atomic_write_text(path, text)


def render_session_summary(
    runs: Sequence[RunDir], *, regressions: Iterable[str] = (), ending: str | None = None
) -> str:
    """The summary's Markdown; ``write_session_summary`` is this plus an atomic write."""
    facts = [_RunFacts.load(run) for run in runs]
    lines = [
        "# Session summary",
        "",
        f"Written {utc_now():%Y-%m-%d %H:%M} UTC by MCPipeChekr {__version__}, "
        f"covering {len(facts)} run(s)" + (f": {', '.join(f.run.run_id for f in facts)}." if facts else "."),
        "",
    ]
    if ending:
        lines += [f"**The loop ended: {_md(ending)}.**", ""]
    errored = [
        (f.run.run_id, len(f.report.errored)) for f in facts if f.report is not None and f.report.errored
    ]
    if errored:
        said = ", ".join(f"{count} in {run_id}" for run_id, count in errored)
        lines += [
            f"**Attempts errored ({said}): an infrastructure failure (the server not started or "
            "connected, the agent, its runner or its model failed), in no figure below.**",
            "",
        ]
    lines += _what_ran(facts)
    lines += _kpis(facts)
    lines += _what_was_found(facts)
    lines += _train_and_holdout(facts)
    lines += _what_was_fixed(facts)
    lines += _before_and_after(facts)
    lines += _costs(facts)
    listed = [line.strip() for line in regressions if line.strip()]
    if listed:
        lines += ["## Regressions", ""]
        lines += [f"- {_md(line)}" for line in listed]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


class _RunFacts:
    """What the summary needs from one run folder; each artifact None when missing or unreadable."""

    def __init__(self, run: RunDir) -> None:
        self.run = run
        self.problems: list[str] = []
        self.manifest: Manifest | None = None
        self.report: BugReport | None = None
        self.review: Review | None = None
        self.fix: FixRecord | None = None

    @classmethod
    def load(cls, run: RunDir) -> _RunFacts:
        facts = cls(run)
        facts.manifest = facts._read(run.manifest, Manifest, lambda _: load_manifest(run))
        facts.report = facts._read(run.bug_report, BugReport)
        facts.review = facts._read(run.review, Review)
        facts.fix = facts._read(run.fix_record, FixRecord)
        return facts

    def _read(self, path: Path, model: type[Any], reader: Callable[[Path], Any] | None = None) -> Any:
        if not path.exists():
            return None
        try:
            return reader(path) if reader else read_model(path, model)
        except UserError as exc:
            self.problems.append(exc.message.splitlines()[0])
            return None


def _what_ran(facts: list[_RunFacts]) -> list[str]:
    lines = ["## What ran", ""]
    if not facts:
        return lines + ["No runs.", ""]
    lines += [
        "| run | started | status | server commit | tasks | phase 1 | phase 2 | phase 3 |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for fact in facts:
        m = fact.manifest
        if m is None:
            lines.append(f"| {fact.run.run_id} | - | no manifest.json | - | - | - | - | - |")
            continue
        commit = (m.mcp_server_sha or "-")[:12] + (" (dirty)" if m.mcp_server_dirty else "")
        status = m.status + (f": {m.status_reason}" if m.status_reason else "")
        lines.append(
            f"| {fact.run.run_id} | {m.started_at:%Y-%m-%d %H:%M} | {_md(status)} | {commit} "
            f"| {len(m.task_ids)} | {_md(m.providers.phase1)} | {_md(m.providers.phase2)} "
            f"| {_md(m.providers.phase3)} |"
        )
    tasks = sorted({task for fact in facts if fact.manifest for task in fact.manifest.task_ids})
    if tasks:
        lines += ["", "Tasks: " + ", ".join(f"`{task}`" for task in tasks) + "."]
    problems = [problem for fact in facts for problem in fact.problems]
    if problems:
        lines += ["", "Unreadable artifacts (left out below):", ""]
        lines += [f"- {_md(problem)}" for problem in problems]
    return lines + [""]


def _kpis(facts: list[_RunFacts]) -> list[str]:
    """Each run's key figures against their targets (kpi.json), with the trend from the run before.

    Why here, near the top: the figures are what says whether the session's
    fixes got the server where it should be, and whether the loop may stop.
    A run evaluated without a kpi.json is listed as such, never filled in.
    """
    lines = ["## KPIs", ""]
    read = [(fact.run.run_id, read_kpis(fact.run)) for fact in facts]
    latest = next((kpis for _, kpis in reversed(read) if kpis is not None), None)
    if latest is None:
        return lines + ["No run of this session has key figures (kpi.json: written by the evaluation).", ""]
    targets = "; ".join(f"{LABELS[kpi.name]} {target_text(kpi)}" for kpi in latest.kpis)
    lines += [
        f"Targets (config.yaml `kpi:`): {_md(targets)}. Each cell: the figure, met / NOT MET / not "
        "measured, and ▲▼ against the run before (docs/kpi.md).",
        "",
        "| run | loop | " + " | ".join(LABELS[kpi.name] for kpi in latest.kpis) + " | all met |",
        "| --- | --- | " + " | ".join("---" for _ in latest.kpis) + " | --- |",
    ]
    for run_id, kpis in read:
        if kpis is None:
            lines.append(f"| {run_id} | - | " + " | ".join("-" for _ in latest.kpis) + " | no kpi.json |")
            continue
        cells = []
        for name in (kpi.name for kpi in latest.kpis):
            figure = kpis.figure(name)
            cells.append("-" if figure is None else _md(_kpi_cell(figure)))
        verdict = "yes" if kpis.all_met() else "no"
        lines.append(f"| {run_id} | {kpis.loop} | " + " | ".join(cells) + f" | {verdict} |")
    costs = [f"{kpis.gap_token_cost:,}" for _, kpis in read if kpis is not None]
    lines += [
        "",
        f"Gap token cost loop after loop: {' → '.join(costs)} tokens; loops so far: {latest.loop}.",
        "",
    ]
    return lines


def _kpi_cell(figure: KpiFigure) -> str:
    if figure.status == "off":
        return "off"
    trend = trend_text(figure)
    return f"{format_value(figure.name, figure.value)} {status_text(figure)}" + (f" {trend}" if trend else "")


def _what_was_found(facts: list[_RunFacts]) -> list[str]:
    lines = ["## What was found", ""]
    previous: set[str] | None = None
    for fact in facts:
        run_id = fact.run.run_id
        report = fact.report
        if report is None:
            lines += [f"### {run_id}", "", "Not evaluated (no bug_report.json).", ""]
            previous = None
            continue
        ids = [bug.id for bug in report.bugs]
        lines += [f"### {run_id}", "", f"{len(ids)} bug(s); review: {_review_line(fact.review)}.", ""]
        if report.errored:
            tasks = sorted({item.task_id for item in report.errored})
            lines += [
                f"{len(report.errored)} attempt(s) errored and were not evaluated: "
                + ", ".join(f"`{task}`" for task in tasks)
                + ".",
                "",
            ]
        for bug in report.bugs:
            lines.append(
                f"- `{bug.id}` ({bug.type}, {bug.severity}, {bug.token_cost_of_gap:,} tokens x "
                f"{bug.occurrences}): {_md(bug.trigger)}"
            )
        if previous is not None:
            gone = sorted(previous - set(ids))
            new = sorted(set(ids) - previous)
            lines += [
                "",
                "Gone since the previous run: "
                + (", ".join(f"`{i}`" for i in gone) if gone else "none")
                + ".",
                "New since the previous run: " + (", ".join(f"`{i}`" for i in new) if new else "none") + ".",
            ]
        previous = set(ids)
        lines.append("")
    if not facts:
        lines += ["Nothing was evaluated.", ""]
    return lines


def _train_and_holdout(facts: list[_RunFacts]) -> list[str]:
    """Train and holdout side by side, and a warning when fixes help only the tasks they saw.

    Holdout tasks (`split: holdout` in tasks.yaml) are traced and evaluated but never shown to
    the fix agent; train getting better while holdout does not is the sign of a fix fitted to
    its tasks, and holdout getting worse one of a fix that broke something else.
    """
    evaluated = [fact for fact in facts if fact.report is not None]
    reports = [fact.report for fact in evaluated if fact.report is not None]
    if not any(stats.split == "holdout" for report in reports for stats in report.tasks):
        return []
    lines = [
        "## Train and holdout",
        "",
        "Successes over decided attempts, and tool calls per attempt. The fix agent sees only the "
        "bugs of train tasks; holdout tasks tell whether its fixes help beyond them.",
        "",
        "| run | train | holdout |",
        "| --- | --- | --- |",
    ]
    figures = []
    for fact in evaluated:
        assert fact.report is not None
        train, holdout = SplitFigures(fact.report, "train"), SplitFigures(fact.report, "holdout")
        figures.append((fact.run.run_id, train, holdout))
        lines.append(f"| {fact.run.run_id} | {train.cell()} | {holdout.cell()} |")
    lines.append("")
    if len(figures) >= 2:
        (first_id, train_a, holdout_a), (last_id, train_b, holdout_b) = figures[0], figures[-1]
        train_trend, holdout_trend = split_trend(train_a, train_b), split_trend(holdout_a, holdout_b)
        span = f"from {first_id} to {last_id}"
        for warning in split_warnings(span, train_a, train_b, holdout_a, holdout_b):
            lines.append(f"**Warning: {warning.title}** {warning.detail}")
        if train_trend != "better" or holdout_trend == "better":
            lines.append(f"Train {train_trend}, holdout {holdout_trend} {span}.")
        lines.append("")
    return lines


def _review_line(review: Review | None) -> str:
    if review is None:
        return "not reviewed"
    notes = f", {len(review.annotations)} annotation(s)" if review.annotations else ""
    line = f"{review.decision} by {_md(review.decided_by)} at {review.decided_at:%Y-%m-%d %H:%M} UTC{notes}"
    if review.decision == "export":
        exported = ", ".join(f"`{bug_id}`" for bug_id in review.bug_ids) or "none"
        line += f"; exported as issues (issues/ in the run folder): {exported}"
    return line


def _what_was_fixed(facts: list[_RunFacts]) -> list[str]:
    lines = ["## What was fixed", ""]
    records = [(fact.run.run_id, fact.fix) for fact in facts if fact.fix is not None]
    if not records:
        return lines + ["Nothing: no run of this session has a fix record (fix.json).", ""]
    for run_id, record in records:
        lines += [f"### {run_id}", ""]
        if record.bugs:
            lines += [
                "| bug | status | iterations | commit | files | reason |",
                "| --- | --- | --- | --- | --- | --- |",
            ]
            for fix in record.bugs:
                lines.append(
                    f"| `{fix.bug_id}` | {fix.status} | {fix.iterations} | {(fix.commit or '-')[:12]} "
                    f"| {_md(', '.join(fix.files_changed))} | {_md(fix.reason)} |"
                )
            committed = sum(1 for fix in record.bugs if fix.status == "committed")
            lines += ["", f"{committed} of {len(record.bugs)} bug(s) committed in {record.repo}."]
        else:
            lines.append("The fix record lists no bugs.")
        health = record.health
        if health is None:
            lines.append("The server's health after the fixes was not checked.")
        elif health.healthy:
            lines.append(f"Server after the fixes: healthy, {health.tools} tool(s).")
        else:
            at = f" at {health.after_commit[:12]}" if health.after_commit else ""
            lines.append(f"Server UNHEALTHY{at} with the fix agent's changes undone: {_md(health.error)}")
        if record.finished_at is None:
            lines.append(
                "The fix loop did not finish (interrupted or crashed); the record shows what it did."
            )
        lines.append("")
    return lines


def _before_and_after(facts: list[_RunFacts]) -> list[str]:
    """Each run against the one before it: every task whose calls, tokens or success changed."""
    compared = [
        comparison
        for before, after in zip(facts, facts[1:], strict=False)
        if (comparison := compare_runs(before.run, after.run)) is not None
    ]
    if not compared:
        return []
    lines = ["## Before and after", ""]
    for comparison in compared:
        head, *changes = comparison.lines()
        lines.append(_md(head))
        lines += [f"- {_md(change.strip())}" for change in changes]
        lines.append("")
    return lines


def _costs(facts: list[_RunFacts]) -> list[str]:
    lines = [
        "## Costs",
        "",
        "Phase 1 agent work per run, from the bug report's task statistics (tokens as the provider "
        "reported them, or estimated where it did not).",
        "",
        "| run | attempts | tool calls | tokens | source |",
        "| --- | --- | --- | --- | --- |",
    ]
    total_tokens = 0.0
    total_calls = 0.0
    for fact in facts:
        if fact.report is None:
            lines.append(f"| {fact.run.run_id} | - | - | - | not evaluated |")
            continue
        attempts = sum(stats.runs for stats in fact.report.tasks)
        calls = sum((stats.mean_calls or 0.0) * stats.runs for stats in fact.report.tasks)
        tokens = sum((stats.mean_tokens_observed or 0.0) * stats.runs for stats in fact.report.tasks)
        sources = sorted({stats.tokens_source for stats in fact.report.tasks if stats.tokens_source})
        source = sources[0] if len(sources) == 1 else ("mixed" if sources else "-")
        total_tokens += tokens
        total_calls += calls
        lines.append(f"| {fact.run.run_id} | {attempts} | {calls:,.0f} | {tokens:,.0f} | {source} |")
    lines += ["", f"Total: {total_calls:,.0f} tool call(s), {total_tokens:,.0f} tokens.", ""]
    return lines


def _md(value: object) -> str:
    """A value safe inside a Markdown table cell."""
    if value is None or value == "":
        return "-"
    return str(value).replace("|", "\\|").replace("\n", " ")
