"""`mcpipechekr fix RUN`: Phase 3, the approved bugs of a run fixed one commit at a time."""

from __future__ import annotations

import click
from rich.table import Table

from mcpipechekr._util.console import console
from mcpipechekr.artifacts.fix_record import FixRecord
from mcpipechekr.cli.common import config_options, effective_config, provider_option, resolve_run
from mcpipechekr.fix import run_fix_loop
from mcpipechekr.server.workspace import prepare_repo


@click.command("fix")
@click.argument("run", metavar="RUN", default="latest")
@config_options
@provider_option("phase3")
@click.option(
    "--again",
    is_flag=True,
    help="Run the fix loop on a report that was already fixed (fix.json finished for the same approval).",
)
@click.pass_context
def fix_command(ctx: click.Context, run: str, again: bool, **_: object) -> None:
    """Fix the approved bugs of a run in the server's repository, one commit per bug.

    RUN is a run id (run-YYYYMMDD-NNN), `latest` (the default), or a run
    folder. Runs only when review.json approves exactly the current
    bug_report.json (see `mcpipechekr review`). For each bug, highest
    token_cost_of_gap first, the agent configured under `fix:` runs in
    server.repo with the same prompt, each time in a fresh process, until it
    prints <promise>COMPLETE</promise> or fix.max_iterations runs are spent.
    A completed bug is committed as `fix: <bug id>` with only the files the
    agent changed (never pushed); an unresolved one is undone. After each
    commit the server is restarted and must pass its health check.

    Writes fix.json, and prompts and agent logs under fix/, in the run folder.
    Exits 0 when every bug was committed (or there was none), 1 when some
    stayed unresolved, 2 when the report is not approved, the repository is
    not clean, or the server is unhealthy after a fix (the commit is named).
    """
    config = effective_config(ctx)
    run_dir = resolve_run(ctx, run, config)
    prepare_repo(config.server)
    record = run_fix_loop(config, run_dir, console=console, again=again)
    console.print(fix_table(record))
    if record.health is not None:
        console.print(
            f"server healthy after the fixes: {record.health.tools} tool(s) in {record.health.elapsed_s}s",
            markup=False,
        )
    elif not record.commits:
        console.print("nothing committed: the server's code is unchanged", markup=False)
    console.print(f"wrote {run_dir.fix_record}", markup=False)
    if any(bug.status != "committed" for bug in record.bugs):
        ctx.exit(1)


def fix_table(record: FixRecord) -> Table:
    """One row per bug: what the fix loop did with it."""
    table = Table(title=f"{record.run_id}: fixes in {record.repo}", title_justify="left")
    for column in ("bug", "status", "runs", "commit", "files / reason"):
        table.add_column(column, overflow="fold")
    for bug in record.bugs:
        detail = ", ".join(bug.files_changed) if bug.status == "committed" else (bug.reason or "")
        table.add_row(bug.bug_id, bug.status, str(bug.iterations), (bug.commit or "")[:7], detail)
    return table
