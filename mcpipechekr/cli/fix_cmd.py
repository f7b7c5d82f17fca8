"""`mcpipechekr fix RUN`: Phase 3, the approved bugs of a run fixed one commit at a time."""

from __future__ import annotations

import click

from mcpipechekr.cli.common import (
    allow_incomplete_option,
    config_options,
    effective_config,
    provider_option,
    resolve_run,
    writes_project,
)
from mcpipechekr.steps.fix import fix_step


@click.command("fix")
@click.argument("run", metavar="RUN", default="latest")
@config_options
@provider_option("phase3")
@click.option(
    "--again",
    is_flag=True,
    help="Run the fix loop on a report that was already fixed (fix.json finished for the same approval).",
)
@allow_incomplete_option
@click.pass_context
@writes_project
def fix_command(ctx: click.Context, run: str, again: bool, allow_incomplete: bool, **_: object) -> None:
    """Fix the approved bugs of a run in the server's repository, one commit per bug.

    RUN is a run id (run-YYYYMMDD-NNN), `latest` (the default), or a run
    folder. Runs only when review.json approves exactly the current
    bug_report.json (see `mcpipechekr review`). For each bug the server can
    fix (`fixable_by: server`; agent-behaviour bugs are never sent), in the
    review's fix order, the agent configured under `fix:` runs in
    server.repo with the same prompt, each time in a fresh process, until it
    prints <promise>COMPLETE</promise> or fix.max_iterations runs are spent.
    Before a completed bug is committed, the server is restarted on the
    change and must pass its health check (a failure is fed back to the next
    run, like failing fix.test_command tests). It is then committed as
    `fix: <bug id>` with only the files the agent changed (never pushed), and
    the bug's finding in the findings home is marked fix-claimed (later runs
    verify it); an unresolved bug is undone. git's hooks, config and info/
    are put back after every agent run, and the agent's git cannot push.

    Ctrl-C (or SIGTERM) ends the agent with everything it started, saves its
    uncommitted edits as fix/interrupted-<bug id>.patch, restores the work
    tree to the last commit and exits 130. Running fix again goes on with
    the bugs not yet committed, first cleaning up after a fix that was
    killed outright.

    Writes fix.json, and prompts and agent logs under fix/, in the run folder.
    Exits 0 when every bug was committed (or there was none), 1 when some
    stayed unresolved, 2 when the report is not approved, the repository is
    not clean, the server is unhealthy even with the agent's changes
    undone, or the run lacks planned traces (without --allow-incomplete);
    130 when interrupted.
    """
    config = effective_config(ctx)
    try:
        record = fix_step(
            config, resolve_run(ctx, run, config), again=again, allow_incomplete=allow_incomplete
        )
    except KeyboardInterrupt:  # the loop printed what it kept
        ctx.exit(130)
    if any(bug.status != "committed" for bug in record.bugs):
        ctx.exit(1)
