"""`doit loop`: iterations of lint, trace, evaluate, review and fix, each in a new run, until one ends it.

Each iteration plans its run (a fix commit changes the server's source, hence a
new run) and builds that run's targets with nested doit invocations, so every
artifact of every iteration is recorded in the one dependency database.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from mcpipechekr._util.console import console
from mcpipechekr.artifacts import RunDir
from mcpipechekr.errors import InputError, UserError
from mcpipechekr.graph import reporter
from mcpipechekr.graph.actions import _action, answers_help
from mcpipechekr.graph.flags import PARAMS, current_settings
from mcpipechekr.graph.inputs import graph_inputs
from mcpipechekr.graph.invocations import build
from mcpipechekr.graph.phase1 import _build_phase1
from mcpipechekr.server import kept as kept_servers


def run_loop(**params: Any) -> bool | None:
    """lint → trace → evaluate → review → fix → restart, a new run each iteration, until exit, no server-side
    bug left, nothing committed, every KPI met (`loop.stop_when: kpis_met`) or the cap."""
    from mcpipechekr.artifacts.runstate import resume_line
    from mcpipechekr.steps.report import session_report_step
    from mcpipechekr.steps.review import loop_review_page
    from mcpipechekr.steps.session import (
        committed_fixes,
        ended_at_review,
        exited_at_review,
        loop_ends_before_review,
        start_session,
    )
    from mcpipechekr.steps.summary import summary_step

    settings = current_settings()
    if settings.shard:
        raise InputError(
            "--shard: the loop evaluates and fixes whole runs; trace a shard with `doit trace --shard K/N` "
            "and merge the shards with `mcpipechekr merge`"
        )
    config, _, _ = graph_inputs.__wrapped__(settings).require()  # config and task selection problems first
    start_session(config, runner=settings.runner)  # before any cost: what would stop a later step
    web = settings.web_review or config.review.web
    page_options = {"port": settings.review_port, "open_browser": settings.open_review}
    with loop_review_page(config, enabled=web, **page_options) as page:  # one page, until the loop ends
        session: list[RunDir] = []
        stop = ""
        for iteration in range(1, config.loop.max_iterations + 1):
            # Planned only now, without touching the cache: the session's start may have restored the server's
            # tree from a killed fix, and a fix changes the server; the run's identity is the tree as traced.
            _, tasks, plan = graph_inputs.__wrapped__(settings).require()
            session.append(plan.run_dir)
            if page is not None:
                page.progress.at(plan.run_id, iteration)
            console.rule(f"iteration {iteration}: {plan.run_id}")
            reporter._ending.shown.clear()  # a new run: each task gets its line again
            if plan.reused and (resuming := resume_line(plan.run_dir)):
                console.print(resuming, markup=False)
            traced = _build_phase1(config, tasks, plan, settings, ["trace"])
            if traced != 0:
                raise UserError(f"the loop stopped in {plan.run_id} before evaluation (see above)")
            settings = replace(settings, new_run=False)  # the run exists now: later steps work in it
            # A fix may have changed the tools (a new sort parameter): entries made against the old ones
            # are rebuilt before this run is judged, so no trace beats a stale minimum.
            if build(["baseline"], settings=replace(settings, regenerate_baseline=False)) != 0:
                raise UserError(
                    f"the loop stopped rebuilding the stale baseline for {plan.run_id} (see above)"
                )
            if build([f"evaluate:{plan.run_id}"], settings=settings) != 0:
                raise UserError(f"the loop stopped evaluating {plan.run_id} (see above)")
            session_report_step(session)  # the evaluation wrote report.html; again only if it misses a run
            # nothing to approve (no server-side bug left), or every KPI met under `stop_when: kpis_met`
            if (reached := loop_ends_before_review(config, plan.run_dir)) is not None:
                stop = reached
                break
            if build(["review"], settings=settings) != 0:
                # the review said where it stopped and what to type: nothing to add
                reporter._ending.reported = True
                return False
            if exited_at_review(plan.run_dir):
                stop = ended_at_review(plan.run_dir, config)
                break
            if config.fixing_off() is not None:  # evaluation only: the review's decision ends the session
                stop = f"evaluation only ({config.fixing_off()}): nothing is fixed here"
                break
            kept_servers.close_kept()  # the fix changes the server's code: no step may use the old one
            if build(["fix"], settings=settings) != 0:
                raise UserError(f"the loop stopped in the fix step of {plan.run_id} (see above)")
            if not committed_fixes(plan.run_dir):
                stop = f"nothing was committed in {plan.run_id}: nothing left to fix"
                break
        else:
            stop = f"loop.max_iterations ({config.loop.max_iterations}) reached"
        summary_step(config, session, ending=stop)
        console.print(f"loop finished: {stop}")
        if page is not None and session:  # the page turns into the last run, read only, and says why
            page.ended(session[-1], stop)


@answers_help
def task_loop() -> dict[str, Any]:
    """Run the loop on the configured server: lint, trace, evaluate, review, fix, restart, again."""
    return {"actions": [_action(run_loop)], "uptodate": [False], "params": PARAMS}
