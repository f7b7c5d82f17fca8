"""The doit build graph: every artifact a target, every action a library call.

`dodo.py` at the project root only imports the `task_*` functions and
`DOIT_CONFIG` from here. Each action calls the same library function the CLI
calls, so `doit <target>` and `mcpipechekr <command>` never diverge.

Command-line knobs (`--config`, `--task`, `--phase1-provider`, …) are doit task
parameters: `doit loop --config other.yaml --phase1-provider openai/gpt-4o`.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from rich.table import Table

from mcpipechekr._util.console import console
from mcpipechekr.config import PHASES, Config, ConfigOverrides, load_config
from mcpipechekr.errors import UserError
from mcpipechekr.pipeline import harness_run
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


def run_loop(config: str, task_ids: list[str], tags: list[str], **providers: str) -> None:
    """Open a run on the configured server: manifest, healthy server, tool snapshot."""
    cfg = _config(config, **providers)
    with harness_run(cfg, task_ids, tags) as run:
        table = Table(title=f"{run.run_dir.run_id}", show_header=False, box=None)
        table.add_row("server", f"{cfg.server.name} ({describe_target(cfg.server)})")
        table.add_row(
            "source",
            f"{run.manifest.mcp_server_sha or '-'}{' (dirty)' if run.manifest.mcp_server_dirty else ''}",
        )
        table.add_row(
            "health",
            f"{len(run.tools.tools)} tools, {run.server.health.elapsed_s:.1f}s" if run.server.health else "-",
        )
        table.add_row("tasks", ", ".join(t.task_id for t in run.tasks))
        table.add_row("providers", ", ".join(f"{p}={getattr(run.manifest.providers, p)}" for p in PHASES))
        table.add_row("run folder", str(run.run_dir.root))
        console.print(table)


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


def task_loop() -> dict[str, Any]:
    """Run the pipeline on the configured server (the bundled example by default)."""
    return {
        "actions": [(_report_errors(run_loop),)],
        "params": CONFIG_PARAMS + SELECTION_PARAMS + PROVIDER_PARAMS,
        "uptodate": [False],
        "verbosity": 2,
    }
