"""Phase 3, `fix`: the approved bugs fixed one commit at a time, and each commit claimed as a finding's fix.

The claim is part of the step, not of a front end: whichever front end ran
the fix loop, a committed fix turns its bug's finding fix-claimed, so later
runs verify it (three greens close it). Commits made before the loop halted
on a broken server, or before Ctrl-C, stand in the repository and are claimed too.
"""

from __future__ import annotations

from datetime import datetime

from rich.console import Console
from rich.table import Table

from mcpipechekr._util.console import console
from mcpipechekr.artifacts import RunDir, utc_now
from mcpipechekr.artifacts.fix_record import FixRecord, read_fix_record
from mcpipechekr.config import Config
from mcpipechekr.errors import UserError
from mcpipechekr.server.workspace import prepare_repo
from mcpipechekr.steps.handoff import claim_fixes, findings_home
from mcpipechekr.steps.stage import coverage_note, require_traced, run_stage


def fix_step(
    config: Config,
    run_dir: RunDir,
    *,
    again: bool = False,
    allow_incomplete: bool = False,
    out: Console = console,
) -> FixRecord:
    """Run the fix loop on the approved report (`fix.loop.run_fix_loop`), claim its commits, describe it.

    `again` runs it on a report that was already fixed. Raises what the loop
    raises (UserError when the report is not approved, ServerHalt when a fix
    leaves the server unhealthy with its changes undone), after claiming the commits it made.
    A run that lacks planned traces is refused unless `allow_incomplete`.
    """
    from mcpipechekr.fix.loop import run_fix_loop

    coverage = require_traced(run_dir, "fix", allow_incomplete=allow_incomplete)
    off = config.fixing_off()
    if off is not None:
        raise UserError(
            f"{run_dir.run_id}: nothing to fix with: {off}. Set server.repo to the server's git checkout and "
            "fix.agent to a coding agent (docs/fix.md), or export the bugs as issues: "
            f"`mcpipechekr review {run_dir.run_id} --export`"
        )
    if coverage is not None:
        out.print(f"note: the report {coverage_note(coverage)}", markup=False)
    prepare_repo(config.server)
    begun = utc_now()
    with run_stage(config, run_dir, "fix"):
        try:
            home = findings_home(config)
            record = run_fix_loop(config, run_dir, console=out, again=again, findings_home=home)
        except BaseException:
            made = _record_since(run_dir, begun)
            if made is not None:
                claim_fixes(config, made)
            raise
        claim_fixes(config, record)
    out.print(fix_table(record))
    if record.health is not None:
        out.print(
            f"server healthy after the fixes: {record.health.tools} tool(s) in {record.health.elapsed_s}s",
            markup=False,
        )
    elif not record.commits:
        out.print("nothing committed: the server's code is unchanged", markup=False)
    out.print(f"wrote {run_dir.fix_record}", markup=False)
    return record


def _record_since(run_dir: RunDir, begun: datetime) -> FixRecord | None:
    """fix.json as the loop left it, when this very invocation wrote it (an older one claims nothing)."""
    if not run_dir.fix_record.exists():
        return None
    record = read_fix_record(run_dir.fix_record)
    return record if record.started_at >= begun else None


def fix_table(record: FixRecord) -> Table:
    """One row per bug: what the fix loop did with it."""
    table = Table(title=f"{record.run_id}: fixes in {record.repo}", title_justify="left")
    for column in ("bug", "status", "runs", "commit", "files / reason"):
        table.add_column(column, overflow="fold")
    for bug in record.bugs:
        detail = ", ".join(bug.files_changed) if bug.status == "committed" else (bug.reason or "")
        table.add_row(bug.bug_id, bug.status, str(bug.iterations), (bug.commit or "")[:7], detail)
    return table
