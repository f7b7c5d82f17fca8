"""What the loop checks before it spends anything, and what it reads between its builds.

`doit loop` (`graph.run_loop`) builds targets; everything else it does is
here: the checks that would otherwise stop a later step after tokens were
spent, and whether an iteration's KPIs, review and fix let the loop go on.
"""

from __future__ import annotations

from rich.console import Console

from mcpipechekr._util.console import console
from mcpipechekr._util.yamlsrc import display_path
from mcpipechekr.artifacts import BugReport, RunDir, read_model
from mcpipechekr.artifacts.fix_record import read_fix_record
from mcpipechekr.artifacts.review import Review
from mcpipechekr.config import Config
from mcpipechekr.steps.stage import announce_project
from mcpipechekr.tasks import refuse_untouched_example


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
            f"evaluation only: {off}; the loop stops at the review, where `export` writes the bugs the "
            "server can fix as issues for its authors",
            markup=False,
        )
    check_preflight(config, loop_phases(config), runner=runner)
    refuse_untouched_example(config.paths.tasks)
    require_baseline(config)
    clean_killed_fixes(config, out=out)


def exited_at_review(run_dir: RunDir) -> bool:
    """True when the person ended the loop at this run's review: `exit`, or `export` (the bugs went to
    the server's authors as issues, so nothing is left for the fix loop here)."""
    return read_model(run_dir.review, Review).decision in ("exit", "export")


def ended_at_review(run_dir: RunDir, config: Config) -> str:
    """Why the loop stops at an `exit` or an `export`, with who decided it and when, and for an export what
    was exported and where: a later `doit loop` with nothing changed stops there without asking, and says
    which decision it follows and how to change it (`config` says whether fixing is on)."""
    run = run_dir.run_id
    review = read_model(run_dir.review, Review)
    when = review.decided_at.astimezone().strftime("%Y-%m-%d %H:%M")
    if config.fixing_off() is not None:
        again = (
            f"to decide again: `mcpipechekr review {run}`"
            if review.decision == "export"
            else f"to export its bugs as issues: `mcpipechekr review {run} --export`"
        )
    else:
        again = f"to fix its bugs after all: `mcpipechekr review {run} --approve`, then `doit loop`"
    if review.decision == "export":
        exported = (
            f"exported {len(review.bug_ids)} bug(s) as issues → {display_path(run_dir.issues)}/ "
            f"({', '.join(review.bug_ids)})"
            if review.bug_ids
            else "exported no bug (none the server can fix)"
        )
        return f"you {exported} at the review of {run} ({review.decided_by}, {when}); {again}"
    return f"you ended the loop at the review of {run} ({review.decided_by}, {when}); {again}"


def committed_fixes(run_dir: RunDir) -> bool:
    """True when this run's fix step committed something: the server changed, and a new run is due."""
    return run_dir.fix_record.exists() and bool(read_fix_record(run_dir.fix_record).commits)


def kpis_reached(config: Config, run_dir: RunDir) -> str | None:
    """Why the loop ends before this run's review under `loop.stop_when: kpis_met`: the run's kpi.json
    meets every configured target (`KpiReport.all_met`; a figure not measured is not met). None when the
    loop goes on: another `stop_when`, no kpi.json, or a target not met. With `no_server_bugs` (the
    default) the loop ends when no server-side bug is left (`no_server_bugs_left`) or a fix step commits
    nothing (`committed_fixes`)."""
    from mcpipechekr.kpi import LABELS, read_kpis

    if config.loop.stop_when != "kpis_met":
        return None
    kpis = read_kpis(run_dir)
    if kpis is None or not kpis.all_met():
        return None
    met = ", ".join(LABELS[kpi.name] for kpi in kpis.kpis if kpi.status == "met")
    return f"every configured KPI is met in {run_dir.run_id} ({met}): loop.stop_when is kpis_met"


def no_server_bugs_left(run_dir: RunDir) -> str | None:
    """Why the loop ends before this run's review: its bug report offers the fixer nothing (no server-side
    bug; agent-behaviour items have no server-side fix). None while there is a bug to approve.

    Under either `loop.stop_when`: a review with nothing to approve would only ask a person to type
    `exit`, and a fix step with nothing to fix would change nothing for the next run to measure.
    """
    from mcpipechekr.review.bugs import bugs_to_fix

    report = read_model(run_dir.bug_report, BugReport)
    if bugs_to_fix(report):
        return None
    agent = sum(1 for bug in report.bugs if bug.fixable_by != "server")
    left = [f"{agent} agent-behaviour item(s) with no server-side fix"] if agent else []
    if report.review_flags:
        left.append(f"{len(report.review_flags)} answer(s) to read in report.html")
    return f"{run_dir.run_id} has no server-side bug left to fix" + (f" ({'; '.join(left)})" if left else "")


def loop_ends_before_review(config: Config, run_dir: RunDir) -> str | None:
    """Why the loop ends after this run's evaluation without asking for a review, or None: every KPI met
    under `loop.stop_when: kpis_met` (`kpis_reached`), or no server-side bug left (`no_server_bugs_left`)."""
    return kpis_reached(config, run_dir) or no_server_bugs_left(run_dir)
