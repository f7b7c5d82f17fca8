"""The build steps of one run, one function per artifact, as the doit graph runs them.

Why a module of its own: `graph.py` decides *what* is stale and in which run
folder; these functions only know how to make one artifact in a given run
folder. Each step runs inside `run_stage`, which keeps the manifest honest: it
says `running` while a step works and `completed`, `failed` or `interrupted`
after, so a crash or Ctrl-C never leaves a run that looks alive.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console

from mcpipechekr._util.console import console
from mcpipechekr._util.yamlsrc import display_path
from mcpipechekr.artifacts import (
    AcceptedRisk,
    BugReport,
    Manifest,
    RunDir,
    ToolsSnapshot,
    read_model,
    write_model,
)
from mcpipechekr.artifacts.atomic import atomic_write_text
from mcpipechekr.artifacts.manifest import RunStatus
from mcpipechekr.config import Config
from mcpipechekr.errors import UserError
from mcpipechekr.findings.home import HOME_ENV, Home
from mcpipechekr.pipeline import new_manifest, recording_end, server_tools
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.runplan import RunPlan, claim_run_dir, read_manifest
from mcpipechekr.server.lifecycle import ServerUnderTest
from mcpipechekr.server.workspace import prepare_repo, repo_state
from mcpipechekr.tasks import Task


def open_planned_run(config: Config, plan: RunPlan, tasks: list[Task]) -> Manifest:
    """Create the planned run folder and its manifest, or return the manifest of the reused run."""
    if claim_run_dir(plan):
        manifest = new_manifest(
            config, plan.run_id, tasks, identity=plan.identity, parameters=plan.parameters
        )
        created = manifest.finished("completed", "created; no step has run yet")
        write_model(plan.run_dir.manifest, created)
        return created
    return read_model(plan.run_dir.manifest, Manifest)


@contextmanager
def run_stage(config: Config, run_dir: RunDir, step: str) -> Iterator[Manifest]:
    """Mark the run `running` for one step, then record how the step ended."""
    manifest = read_model(run_dir.manifest, Manifest)
    running = manifest.model_copy(update={"status": "running", "status_reason": None, "finished_at": None})
    write_model(run_dir.manifest, running)

    def finish(status: RunStatus, reason: str | None) -> None:
        latest = read_model(run_dir.manifest, Manifest)  # a step may have updated it (accepted risks)
        write_model(run_dir.manifest, latest.finished(status, reason))

    with recording_end(config, finish, step):
        yield running


def snapshot_step(config: Config, plan: RunPlan, tasks: list[Task]) -> ToolsSnapshot:
    """Start the server, pass its health check, and pin the tools it offers → tools.json."""
    prepare_repo(config.server)
    open_planned_run(config, plan, tasks)
    run_dir = plan.run_dir
    with run_stage(config, run_dir, "tools"):
        with ServerUnderTest(config.server, run_dir.server_stderr_log) as server:
            assert server.health is not None
            tools = server_tools(config, server, server.health)
        write_model(run_dir.tools, tools)
    console.print(
        f"{run_dir.run_id}: server '{config.server.name}' healthy, {len(tools.tools)} tools "
        f"({'reused run' if plan.reused else 'new run'}) → {display_path(run_dir.tools)}"
    )
    return tools


def check_step(config: Config, run_dir: RunDir) -> None:
    """check: protocol, functional and quality layers → check_report.json."""
    from mcpipechekr.check.runner import run_check, write_check_report

    with run_stage(config, run_dir, "check"):
        report = run_check(config)
        write_check_report(run_dir, report)
    summary = report.summary
    console.print(
        f"check: {summary.passed}/{summary.total} passed, {summary.failed} failed, "
        f"{summary.warned} warnings, {summary.skipped} skipped, {summary.expected_failures} expected "
        f"failure(s) → {display_path(run_dir.check_report)}"
    )


def lint_step(config: Config, run_dir: RunDir, *, interactive: bool | None = None) -> None:
    """Phase 0.5 → tef_report.json; raises UserError when a blocking risk is not accepted (the gate)."""
    from mcpipechekr.lint import confirm_lint_risks, lint, lint_gate, write_tef_report
    from mcpipechekr.lint.risks import blocking_findings

    interactive = sys.stdin.isatty() if interactive is None else interactive
    with run_stage(config, run_dir, "lint") as manifest:
        outcome = lint(config, tools=read_model(run_dir.tools, ToolsSnapshot))
        write_tef_report(run_dir, outcome.report)
        summary = outcome.report.summary
        console.print(
            f"lint ({outcome.report.selector}{', reused' if outcome.reused else ''}): "
            f"{summary.errors} error(s), {summary.warnings} warning(s), {summary.overlaps} overlapping "
            f"pair(s), {summary.misleading_tools} misleading tool(s), {summary.security_findings} security "
            f"finding(s) → {display_path(run_dir.tef_report)}"
        )
        for warning in outcome.warnings:
            console.print(f"[yellow]warning:[/] {warning}")
        accepted = list(outcome.report.accepted_risks)
        if lint_gate(outcome.report) and interactive and confirm_lint_risks(outcome.report, console):
            accepted += [
                AcceptedRisk(rule_id=rule, tool=tool, reason="accepted at the lint gate of `doit loop`")
                for rule, tool, _ in blocking_findings(outcome.report)
            ]
        # The manifest records every risk the run goes on with, accepted now or by `lint --accept-risk`.
        write_model(run_dir.manifest, manifest.model_copy(update={"accepted_risks": accepted}))
        blocking = lint_gate(outcome.report, accepted)
        for reason in blocking:
            console.print(f"  [red]blocking:[/] {reason}")
        if blocking:
            raise UserError(
                "stopped before Phase 1: lint found risks nobody accepted. Review them with "
                "`mcpipechekr lint`, then accept with `mcpipechekr lint --accept-risk TOOL` or fix the "
                "descriptions."
            )


def trace_step(
    config: Config,
    run_dir: RunDir,
    task: Task,
    spec: ProviderSpec,
    repetition: int,
    *,
    runner: str = "native",
    keep_builtin_tools: bool = False,
) -> Path | None:
    """Phase 1, one attempt: the task run blind by `spec` → traces/<task>__<provider>__rNNN.json."""
    import functools

    import anyio

    from mcpipechekr.runners.engine import Attempt, run_attempts
    from mcpipechekr.runners.registry import runner_factory

    attempt = Attempt(task, spec, repetition)
    runner_for = runner_factory(config, runner, keep_builtin_tools=keep_builtin_tools)
    with run_stage(config, run_dir, f"trace {attempt.label}"):
        state = anyio.run(functools.partial(run_attempts, config, run_dir, [attempt], runner_for))
    from mcpipechekr.artifacts.journal import journal_path

    record_call_evidence(
        config,
        run_dir,
        [journal_path(run_dir, a.task.task_id, str(a.provider), a.repetition) for a in state.attempts],
    )
    done = state.attempts[0]
    where = display_path(done.trace) if done.trace else "no trace"
    console.print(f"trace {done.label}: {done.state}, {done.tokens:,} tokens → {where}")
    return done.trace


def findings_home(config: Config) -> Home:
    """$MCPIPECHEKR_HOME when set, else config.yaml's `paths.home`."""
    return Home.resolve(os.environ.get(HOME_ENV) or config.paths.home)


def record_call_evidence(config: Config, run_dir: RunDir, journals: Iterable[Path]) -> None:
    """Hand Phase 1 capture journals to the findings home as call records, so that failures recurring
    across runs (and real use) are seen; event ids are derived, so handing one over twice adds nothing."""
    from mcpipechekr.findings.phase1 import records_from_journal
    from mcpipechekr.findings.records import append_records

    home = findings_home(config)
    for journal in journals:
        if journal.exists():
            session = f"{run_dir.run_id}/{journal.stem}"
            append_records(home, records_from_journal(journal, config.server.name, session, home=home))


def evaluate_step(config: Config, run_dir: RunDir) -> None:
    """Phase 2 → bug_report.json and phase2_narrative.md; bugs are registered as findings."""
    from mcpipechekr.baseline import require_baseline
    from mcpipechekr.evaluate import evaluate_run

    require_baseline(config)
    with run_stage(config, run_dir, "evaluate"):
        report = evaluate_run(config, run_dir)
    top = report.bugs[0] if report.bugs else None
    console.print(
        f"evaluate: {len(report.bugs)} bug(s)"
        + (f", highest token_cost_of_gap {top.token_cost_of_gap:,} ({top.id})" if top else "")
        + f" → {display_path(run_dir.bug_report)}"
    )
    for bug in report.bugs:
        console.print(f"  {bug.id}  {bug.type}  gap {bug.token_cost_of_gap:,} tokens  x{bug.occurrences}")
    verify_findings(config, run_dir, report)


def verify_findings(config: Config, run_dir: RunDir, report: BugReport) -> None:
    """Register the run's bugs as findings, then judge every followed finding by this run.

    A fixed bug that is absent from this run's report is one green verification;
    present again, it is red, and a closed finding coming back is a regression.
    The outcome goes to the end of phase2_narrative.md.
    """
    from mcpipechekr.findings.bugs import register_bug_report
    from mcpipechekr.findings.reverify import verify_from_bug_report, verify_registered_probes

    home = findings_home(config)
    register_bug_report(home, report, server=config.server.name)
    outcome = verify_from_bug_report(home, report, server_revision=repo_state(config.server).sha).merge(
        verify_registered_probes(home, config.server, run_id=run_dir.run_id)
    )
    lines = outcome.summary_lines()
    if not lines:
        return
    for line in lines:
        console.print(line)
    narrative = run_dir.phase2_narrative.read_text(encoding="utf-8").rstrip("\n")
    block = "\n".join(f"    {line}" for line in lines)
    atomic_write_text(
        run_dir.phase2_narrative, f"{narrative}\n\n## Findings verified by this run\n\n{block}\n"
    )


def review_step(config: Config, run_dir: RunDir, *, out: Console = console) -> str:
    """The human review checkpoint: approve (with annotations) or exit; never approves by default."""
    from mcpipechekr.review import review_checkpoint

    review = review_checkpoint(run_dir, out, config=config)
    if review is None:
        raise UserError(
            f"the loop stopped at the review of {run_dir.run_id}; decide as shown above, then run "
            "`doit loop` again to go on."
        )
    return review.decision


def fix_step(config: Config, run_dir: RunDir) -> None:
    """Phase 3: fix the approved bugs one at a time, commit each, restart and health-check the server."""
    from mcpipechekr.fix.loop import run_fix_loop

    with run_stage(config, run_dir, "fix"):
        record = run_fix_loop(config, run_dir, server=None, console=console)
    from mcpipechekr.findings.reverify import claim_bug_fix

    home = findings_home(config)
    for entry in record.bugs:
        if entry.status == "committed" and entry.commit:
            claim_bug_fix(home, entry.bug_id, entry.commit)  # later runs verify it; three greens close it


def report_step(config: Config, runs: list[RunDir]) -> Path:
    """session_summary.md of the last run: what ran, what was found, what was fixed, costs, regressions."""
    from mcpipechekr.findings.lifecycle import regression_stats
    from mcpipechekr.review import write_session_summary

    started = [manifest.started_at for run in runs if (manifest := read_manifest(run)) is not None]
    stats = regression_stats(findings_home(config), since=min(started) if started else None)
    lines = [
        f"regression rate: {stats.regressions} regression(s) for {stats.fixes} fix(es) claimed"
        + (f" ({stats.rate:.0%})" if stats.fixes else "")
    ]
    path = write_session_summary(runs, runs[-1].session_summary, regressions=lines)
    console.print(f"session summary → {display_path(path)}")
    return path
