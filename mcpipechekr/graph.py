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
from pathlib import Path
from typing import Any

from rich.table import Table

from mcpipechekr._util.console import console
from mcpipechekr.artifacts import AcceptedRisk, write_model
from mcpipechekr.check.runner import run_check, write_check_report
from mcpipechekr.config import PHASES, Config, ConfigOverrides, load_config
from mcpipechekr.errors import UserError
from mcpipechekr.lint import confirm_lint_risks, lint, lint_gate, write_tef_report
from mcpipechekr.lint.risks import blocking_findings
from mcpipechekr.pipeline import HarnessRun, harness_run
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


def run_loop(config: str, task_ids: list[str], tags: list[str], **providers: str) -> None:
    """Open a run on the configured server, check it and lint its tool descriptions."""
    cfg = _config(config, **providers)
    with harness_run(cfg, task_ids, tags) as run:
        console.print(_summary_table(run))
        _check_step(run)
        if not _lint_step(run):
            raise UserError("the loop stopped at the lint gate (see above)")
        console.print(f"run folder: {run.run_dir.root}")


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


def task_loop() -> dict[str, Any]:
    """Run the pipeline on the configured server (the bundled example by default)."""
    return {
        "actions": [(_report_errors(run_loop),)],
        "params": CONFIG_PARAMS + SELECTION_PARAMS + PROVIDER_PARAMS,
        "uptodate": [False],
        "verbosity": 2,
    }
