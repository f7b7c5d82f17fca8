"""The doit build graph: every artifact a target, every action a library call.

`dodo.py` at the project root only imports the `task_*` functions and
`DOIT_CONFIG` from here. Each action calls the same library function the CLI
calls, so `doit <target>` and `mcpipechekr <command>` never diverge.

Command-line knobs (`--config`, `--task`, `--phase1-provider`, …) are doit task
parameters: `doit loop --config other.yaml --phase1-provider openai/gpt-4o`.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.table import Table

from mcpipechekr._util.console import console
from mcpipechekr.artifacts import AcceptedRisk, list_runs, list_traces, write_model
from mcpipechekr.baseline import build_baseline, require_baseline
from mcpipechekr.check.runner import run_check, write_check_report
from mcpipechekr.config import PHASES, Config, ConfigOverrides, load_config
from mcpipechekr.errors import UserError
from mcpipechekr.evaluate import evaluate_run
from mcpipechekr.lint import confirm_lint_risks, lint, lint_gate, write_tef_report
from mcpipechekr.lint.risks import blocking_findings
from mcpipechekr.pipeline import HarnessRun, harness_run
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.runners.execute import phase1_for_run
from mcpipechekr.server.lifecycle import ServerUnderTest, describe_target
from mcpipechekr.server.workspace import prepare_repo

DEP_FILE = ".mcpipechekr/doit.db"
Path(DEP_FILE).parent.mkdir(exist_ok=True)

DOIT_CONFIG: dict[str, Any] = {
    "default_tasks": ["loop"],
    "dep_file": DEP_FILE,
    "verbosity": 2,
    "action_string_formatting": "new",
}

CONFIG_PARAMS: list[dict[str, Any]] = [
    {"name": "config", "long": "config", "default": "config.yaml", "help": "The config file."},
]
RUN_PARAMS: list[dict[str, Any]] = [
    {"name": "repeat", "long": "repeat", "type": int, "default": 1, "help": "Attempts per task (Phase 1)."},
    {"name": "concurrency", "long": "concurrency", "type": int, "default": 4, "help": "Attempts at once."},
]
REGENERATE_PARAM: dict[str, Any] = {
    "name": "regenerate_baseline",
    "long": "regenerate-baseline",
    "type": bool,
    "default": False,
    "help": "Baseline the selected tasks again, replacing their entries.",
}
PROVIDER_PARAMS: list[dict[str, Any]] = [
    {
        "name": f"{phase}_provider",
        "long": f"{phase}-provider",
        "default": "",
        "help": f"Model for {phase} (overrides providers.{phase}), e.g. openai/gpt-4o or demo.",
    }
    for phase in PHASES
]
SELECTION_PARAMS: list[dict[str, Any]] = [
    {
        "name": "task_ids",
        "long": "task",
        "type": list,
        "default": [],
        "help": "Run only this task; repeatable.",
    },
    {"name": "tags", "long": "tag", "type": list, "default": [], "help": "Run only tasks with this tag."},
]


def _config(config: str, **providers: str) -> Config:
    chosen = {phase: providers.get(f"{phase}_provider") for phase in PHASES}
    overrides = ConfigOverrides(providers={phase: value for phase, value in chosen.items() if value})
    return load_config(config, overrides)


def _report_errors(action: Any) -> Any:
    """doit prints tracebacks for failed python-actions; a user error deserves its message only."""

    @functools.wraps(action)
    def run(**kwargs: Any) -> bool:
        try:
            action(**kwargs)
        except UserError as exc:
            console.print(f"[bold red]error:[/] {exc.message}", markup=True, soft_wrap=True)
            return False
        return True

    return run


def prepare_workspace(config: str) -> None:
    """Create the server's git repository from its template when it does not exist yet."""
    cfg = load_config(config)
    repo = prepare_repo(cfg.server)
    if repo is not None:
        console.print(f"server repository: {repo}")


def check_health(config: str) -> None:
    """Start the server, run the health check, stop it."""
    cfg = load_config(config)
    prepare_repo(cfg.server)
    with ServerUnderTest(cfg.server) as live:
        assert live.health is not None
        console.print(
            f"server '{cfg.server.name}' healthy ({describe_target(cfg.server)}): "
            f"{len(live.health.tools)} tools in {live.health.elapsed_s:.1f}s: {', '.join(live.health.tools)}"
        )


def _summary_table(run: HarnessRun) -> Table:
    cfg, manifest = run.config, run.manifest
    table = Table(title=run.run_dir.run_id, show_header=False, box=None)
    table.add_row("server", f"{cfg.server.name} ({describe_target(cfg.server)})")
    dirty = " (dirty)" if manifest.mcp_server_dirty else ""
    table.add_row("source", f"{manifest.mcp_server_sha or '-'}{dirty}")
    health = run.server.health
    table.add_row("health", f"{len(run.tools.tools)} tools, {health.elapsed_s:.1f}s" if health else "-")
    table.add_row("tasks", ", ".join(t.task_id for t in run.tasks))
    table.add_row("providers", ", ".join(f"{p}={getattr(manifest.providers, p)}" for p in PHASES))
    return table


def _check_step(run: HarnessRun) -> None:
    """check: protocol, functional and quality layers against the run's server → check_report.json."""
    report = run_check(run.config, server=run.server)
    write_check_report(run.run_dir, report)
    summary = report.summary
    console.print(
        f"check: {summary.passed}/{summary.total} passed, {summary.failed} failed, "
        f"{summary.warned} warnings, {summary.skipped} skipped, {summary.expected_failures} expected "
        f"failure(s) → {run.run_dir.check_report}"
    )


def _lint_step(run: HarnessRun) -> bool:
    """Phase 0.5: lint the tools the run saw → tef_report.json; False when a blocking risk is not accepted."""
    outcome = lint(run.config, tools=run.tools)
    write_tef_report(run.run_dir, outcome.report)
    summary = outcome.report.summary
    console.print(
        f"lint ({outcome.report.selector}{', reused' if outcome.reused else ''}): "
        f"{summary.errors} error(s), {summary.warnings} warning(s), {summary.overlaps} overlapping "
        f"pair(s), {summary.misleading_tools} misleading tool(s), {summary.security_findings} security "
        f"finding(s) → {run.run_dir.tef_report}"
    )
    for warning in outcome.warnings:
        console.print(f"[yellow]warning:[/] {warning}")
    accepted = list(outcome.report.accepted_risks)
    if lint_gate(outcome.report) and sys.stdin.isatty() and confirm_lint_risks(outcome.report, console):
        accepted += [
            AcceptedRisk(rule_id=rule, tool=tool, reason="accepted at the lint gate of `doit loop`")
            for rule, tool, _ in blocking_findings(outcome.report)
        ]
    # The manifest records every risk this run goes on with, whether accepted now or by `lint --accept-risk`.
    run.manifest.accepted_risks = accepted
    write_model(run.run_dir.manifest, run.manifest)
    blocking = lint_gate(outcome.report, accepted)
    if not blocking:
        return True
    for reason in blocking:
        console.print(f"  [red]blocking:[/] {reason}")
    console.print(
        "[bold red]stopped before Phase 1:[/] lint found risks nobody accepted. Review them with "
        "`mcpipechekr lint`, then accept with `mcpipechekr lint --accept-risk TOOL` or fix the descriptions."
    )
    return False


def _trace_step(run: HarnessRun, providers: list[ProviderSpec], repeat: int, concurrency: int) -> None:
    """Phase 1: every selected task, blind, with each provider → traces/ (and journals/)."""
    paths = phase1_for_run(run, providers, repeat=repeat, concurrency=concurrency)
    console.print(f"trace: {len(paths)} trace(s) → {run.run_dir.traces}")


def _evaluate_step(run: HarnessRun) -> None:
    """Phase 2: traces against the baseline → bug_report.json and phase2_narrative.md."""
    report = evaluate_run(run.config, run.run_dir)
    top = report.bugs[0] if report.bugs else None
    console.print(
        f"evaluate: {len(report.bugs)} bug(s)"
        + (f", highest token_cost_of_gap {top.token_cost_of_gap:,} ({top.id})" if top else "")
        + f" → {run.run_dir.bug_report}"
    )
    for bug in report.bugs:
        console.print(f"  {bug.id}  {bug.type}  gap {bug.token_cost_of_gap:,} tokens  x{bug.occurrences}")


def run_loop(
    config: str, task_ids: list[str], tags: list[str], repeat: int = 1, concurrency: int = 4, **providers: str
) -> None:
    """One iteration of the loop: check, lint (gate), trace blind, evaluate against the baseline."""
    cfg = _config(config, **providers)
    require_baseline(cfg)  # before any cost: the loop needs the accepted answers to judge against
    with harness_run(cfg, task_ids, tags) as run:
        console.print(_summary_table(run))
        _check_step(run)
        if not _lint_step(run):
            raise UserError("the loop stopped at the lint gate (see above)")
        _trace_step(run, [cfg.providers.for_phase("phase1")], repeat, concurrency)
        _evaluate_step(run)
        console.print(f"run folder: {run.run_dir.root}")


def run_baseline(
    config: str, task_ids: list[str], tags: list[str], regenerate_baseline: bool, **providers: str
) -> None:
    """Phase 0 → runs/baseline.json: only tasks without an entry, unless --regenerate-baseline."""
    outcome = build_baseline(
        _config(config, **providers), task_ids=task_ids, tags=tags, regenerate=regenerate_baseline
    )
    console.print(
        f"baseline: {len(outcome.baselined)} task(s) baselined, {len(outcome.kept)} kept → {outcome.path}"
    )
    if outcome.problems:
        raise UserError("; ".join(outcome.problems))


def run_trace_only(
    config: str, task_ids: list[str], tags: list[str], repeat: int = 1, concurrency: int = 4, **providers: str
) -> None:
    """Open a run and trace the selected tasks with the phase-1 provider."""
    cfg = _config(config, **providers)
    with harness_run(cfg, task_ids, tags) as run:
        _trace_step(run, [cfg.providers.for_phase("phase1")], repeat, concurrency)


def evaluate_one(config: str, run_root: str, **providers: str) -> None:
    """Evaluate one run's traces (Phase 2)."""
    report = evaluate_run(_config(config, **providers), run_root)
    console.print(f"{Path(run_root).name}: {len(report.bugs)} bug(s) → {Path(run_root) / 'bug_report.json'}")


def run_check_only(config: str) -> None:
    """Open a run and check the server (protocol, functional, quality)."""
    with harness_run(load_config(config)) as run:
        _check_step(run)


def run_lint_only(config: str, **providers: str) -> None:
    """Open a run and lint the server's tool descriptions."""
    with harness_run(_config(config, **providers)) as run:
        if not _lint_step(run):
            raise UserError("lint found blocking risks (see above)")


def task_workspace() -> dict[str, Any]:
    """Prepare the server's git repository (copied from server.repo_template on first use)."""
    return {"actions": [(_report_errors(prepare_workspace),)], "params": CONFIG_PARAMS, "verbosity": 2}


def task_health() -> dict[str, Any]:
    """Start the server under test and run its health check."""
    return {
        "actions": [(_report_errors(check_health),)],
        "params": CONFIG_PARAMS,
        "uptodate": [False],
        "verbosity": 2,
    }


def task_check() -> dict[str, Any]:
    """Check the server: protocol compliance, functional cases, response sizes → check_report.json."""
    return {
        "actions": [(_report_errors(run_check_only),)],
        "params": CONFIG_PARAMS,
        "uptodate": [False],
        "verbosity": 2,
    }


def task_lint() -> dict[str, Any]:
    """Phase 0.5: lint the tool descriptions → tef_report.json."""
    return {
        "actions": [(_report_errors(run_lint_only),)],
        "params": CONFIG_PARAMS + PROVIDER_PARAMS,
        "uptodate": [False],
        "verbosity": 2,
    }


def task_baseline() -> dict[str, Any]:
    """Phase 0: the accepted answer of each task → runs/baseline.json (new tasks only, unless asked)."""
    return {
        "actions": [(_report_errors(run_baseline),)],
        "params": CONFIG_PARAMS + SELECTION_PARAMS + PROVIDER_PARAMS + [REGENERATE_PARAM],
        "uptodate": [False],
        "verbosity": 2,
    }


def task_trace() -> dict[str, Any]:
    """Phase 1: run the tasks blind with the phase-1 provider → runs/{run-id}/traces/."""
    return {
        "actions": [(_report_errors(run_trace_only),)],
        "params": CONFIG_PARAMS + SELECTION_PARAMS + RUN_PARAMS + PROVIDER_PARAMS,
        "uptodate": [False],
        "verbosity": 2,
    }


def task_evaluate() -> Iterator[dict[str, Any]]:
    """Phase 2: each run's traces against the baseline → bug_report.json (rebuilt when they change)."""
    yield {"basename": "evaluate", "name": None, "doc": task_evaluate.__doc__}
    try:
        runs = list_runs(load_config("config.yaml").paths.runs)
    except UserError:
        runs = []  # no usable config.yaml here: nothing to evaluate, and `doit list` still works
    for run in runs:
        deps = [*map(str, list_traces(run)), *([str(run.baseline)] if run.baseline.exists() else [])]
        if not deps:
            continue
        yield {
            "name": run.run_id,
            "actions": [
                (_report_errors(evaluate_one), [], {"config": "config.yaml", "run_root": str(run.root)})
            ],
            "file_dep": deps,
            "targets": [str(run.bug_report), str(run.phase2_narrative)],
            "verbosity": 2,
        }


def task_loop() -> dict[str, Any]:
    """Run the pipeline on the configured server (the bundled example by default)."""
    return {
        "actions": [(_report_errors(run_loop),)],
        "params": CONFIG_PARAMS + SELECTION_PARAMS + RUN_PARAMS + PROVIDER_PARAMS,
        "uptodate": [False],
        "verbosity": 2,
    }
