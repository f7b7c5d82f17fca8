"""What the loop checks before it spends anything, and what it reads between its builds.

`doit loop` (`graph.run_loop`) builds targets; everything else it does is
here: the checks that would otherwise stop a later step after tokens were
spent, and whether an iteration's review and fix let the loop go on.
"""

from __future__ import annotations

from rich.console import Console

from mcpipechekr._util.console import console
from mcpipechekr.artifacts import RunDir, read_model
from mcpipechekr.artifacts.fix_record import read_fix_record
from mcpipechekr.artifacts.review import Review
from mcpipechekr.config import Config
from mcpipechekr.steps.stage import announce_project


def start_session(config: Config, *, runner: str, out: Console = console) -> None:
    """Name the project, then refuse now what would stop a later step: the settings of every phase
    (preflight) and a missing baseline, which the loop needs to judge answers against. A fix loop
    that was killed mid-bug is cleaned up after first: its agent would edit on, and its edits would
    be traced as the server's code (`fix.interruption`)."""
    from mcpipechekr.baseline import require_baseline
    from mcpipechekr.fix.interruption import clean_killed_fixes
    from mcpipechekr.preflight import check_preflight, loop_phases

    announce_project(config, out)
    off = config.fixing_off()
    if off is not None:
        out.print(
            f"evaluation only: {off}; the loop stops at the review, where `export` writes the approved "
            "bugs as issues for the server's authors",
            markup=False,
        )
    check_preflight(config, loop_phases(config), runner=runner)
    require_baseline(config)
    clean_killed_fixes(config, out=out)


def exited_at_review(run_dir: RunDir) -> bool:
    """True when the person ended the loop at this run's review."""
    return read_model(run_dir.review, Review).decision == "exit"


def ended_at_review(run_dir: RunDir) -> str:
    """Why the loop stops at an `exit`, with who decided it and when: a later `doit loop` with nothing
    changed stops there without asking, and says which decision it follows and how to change it."""
    review = read_model(run_dir.review, Review)
    when = review.decided_at.astimezone().strftime("%Y-%m-%d %H:%M")
    return (
        f"you ended the loop at the review of {run_dir.run_id} ({review.decided_by}, {when}); to fix its "
        f"bugs after all: `mcpipechekr review {run_dir.run_id} --approve`, then `doit loop`"
    )


def committed_fixes(run_dir: RunDir) -> bool:
    """True when this run's fix step committed something: the server changed, and a new run is due."""
    return run_dir.fix_record.exists() and bool(read_fix_record(run_dir.fix_record).commits)
