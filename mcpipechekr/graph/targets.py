"""The targets of the planned run besides Phase 1: the tools snapshot, check, lint, evaluate, review, fix,
report, and the baseline.

Each task creator turns the planned run into doit's targets, dependencies and
up-to-date checks; its action calls a step in `steps`, imported when the task
runs, so that listing the graph stays quick.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from doit.tools import config_changed

from mcpipechekr.artifacts import RunDir, list_runs, list_traces
from mcpipechekr.artifacts.trace import trace_path
from mcpipechekr.config import Config
from mcpipechekr.errors import UserError
from mcpipechekr.graph.actions import _action, _p, _unavailable, answers_help
from mcpipechekr.graph.flags import PARAMS, current_settings
from mcpipechekr.graph.inputs import GraphInputs, _inputs, load_graph_config

if TYPE_CHECKING:
    from mcpipechekr.artifacts.baseline import Baseline

# Tasks of the planned run.


def _snapshot() -> None:
    from mcpipechekr.steps.snapshot import snapshot_step

    config, tasks, plan = _inputs().require()
    snapshot_step(config, plan, tasks)


@answers_help
def task__tools() -> dict[str, Any]:
    """The server's tool definitions, pinned for the run (rebuilt when the server's source changes)."""
    inputs = _inputs()
    if inputs.error:
        return _unavailable("_tools", task__tools.__doc__, inputs.error)
    _, _, plan = inputs.require()
    return {
        "actions": [_action(_snapshot)],
        "targets": [_p(plan.run_dir.tools)],
        "uptodate": [config_changed(plan.identity)],
        "params": PARAMS,
    }


def _planned(module: str, step: str, *, incomplete: bool = False) -> Callable[[], None]:
    """An action calling `steps.<module>.<step>(config, run_dir)` for the planned run, with the
    `--allow-incomplete` flag when `incomplete`; the step is imported when it runs, so that listing
    the graph stays quick."""

    def run() -> None:
        import importlib

        inputs = _inputs()
        config, _, plan = inputs.require()
        options = {"allow_incomplete": inputs.settings.allow_incomplete} if incomplete else {}
        if step == "require_decision":
            options["web"] = inputs.settings.web_review or config.review.web
            options["port"] = inputs.settings.review_port
            options["open_browser"] = inputs.settings.open_review
        getattr(importlib.import_module(f"mcpipechekr.steps.{module}"), step)(config, plan.run_dir, **options)

    run.__name__ = step
    return run


@answers_help
def task_check() -> dict[str, Any]:
    """Check the server: protocol compliance, functional cases, response sizes → check_report.json."""
    inputs = _inputs()
    if inputs.error:
        return _unavailable("check", task_check.__doc__, inputs.error)
    config, _, plan = inputs.require()
    cases = [path for path in (config.check.cases, config.check.expected_failures) if path]
    return {
        "actions": [_action(_planned("check", "check_step"))],
        "file_dep": [_p(plan.run_dir.tools), *map(_p, cases)],
        "targets": [_p(plan.run_dir.check_report)],
        "uptodate": [config_changed(config.config_hash)],
        "params": PARAMS,
    }


@answers_help
def task_lint() -> dict[str, Any]:
    """Phase 0.5: lint the tool descriptions → tef_report.json (stops the loop on unaccepted risks)."""
    inputs = _inputs()
    if inputs.error:
        return _unavailable("lint", task_lint.__doc__, inputs.error)
    config, _, plan = inputs.require()
    return {
        "actions": [_action(_planned("lint", "lint_step"))],
        "file_dep": [_p(plan.run_dir.tools)],
        "targets": [_p(plan.run_dir.tef_report)],
        "uptodate": [config_changed(config.config_hash)],
        "params": PARAMS,
    }


def _evaluate(run_root: str) -> None:
    from mcpipechekr.steps.evaluate import evaluate_step

    inputs = _inputs()
    config, _, _ = inputs.require()
    evaluate_step(
        config,
        RunDir(Path(run_root)),
        require_baseline=True,
        allow_incomplete=inputs.settings.allow_incomplete,
    )


@answers_help
def task_evaluate() -> Iterator[dict[str, Any]]:
    """Phase 2: a run's traces against the baseline → bug_report.json, phase2_narrative.md, kpi.json."""
    inputs = _inputs()
    if inputs.error:
        yield _unavailable("evaluate", task_evaluate.__doc__, inputs.error)
        return
    config, tasks, plan = inputs.require()
    yield {"basename": "evaluate", "name": None, "doc": task_evaluate.__doc__, "params": PARAMS}
    baseline = [_p(plan.run_dir.baseline)] if plan.run_dir.baseline.exists() else []
    runs = {run.run_id: run for run in list_runs(config.paths.runs)}
    traced = [
        trace_path(plan.run_dir, task.task_id, str(config.providers.phase1), repetition)
        for task in tasks
        for repetition in range(1, inputs.settings.repeat + 1)
    ]
    mine = None if plan.shard is None else set(plan.shard.attempts)  # a shard's run plans its own only
    planned = [_p(path) for path in traced if mine is None or path.stem in mine]
    for run_id, run in sorted({**runs, plan.run_id: plan.run_dir}.items()):
        traces = planned if run_id == plan.run_id else [_p(path) for path in list_traces(run)]
        if not traces:
            continue
        yield {
            "name": run_id,
            "actions": [_action(_evaluate, str(run.root))],
            "file_dep": [*traces, *baseline],
            "targets": [_p(run.bug_report), _p(run.phase2_narrative), _p(run.kpi)],
            "params": PARAMS,
        }


def _review_is_current(run_dir: RunDir) -> Callable[[], bool]:
    """Up to date while review.json holds a decision (approve, export or exit) on the bug report as it is
    now.

    A decided report is not asked about again: `exit` and `export` end the loop there, `approve` lets the
    fix step run. A review.json on another report, or one `record_decision` did not seal, decides nothing.
    """

    def check() -> bool:
        from mcpipechekr.review import current_review

        try:
            return current_review(run_dir) is not None
        except UserError:
            return False

    return check


@answers_help
def task_review() -> dict[str, Any]:
    """Human review of the bug report: approve (with annotations), export as issues, or exit → review.json."""
    inputs = _inputs()
    if inputs.error:
        return _unavailable("review", task_review.__doc__, inputs.error)
    _, _, plan = inputs.require()
    return {
        "actions": [_action(_planned("review", "require_decision", incomplete=True))],
        "file_dep": [_p(plan.run_dir.bug_report)],
        "targets": [_p(plan.run_dir.review)],
        "uptodate": [_review_is_current(plan.run_dir)],
        "params": PARAMS,
    }


@answers_help
def task_fix() -> dict[str, Any]:
    """Phase 3: fix the approved bugs, one commit each, restart the server → fix.json."""
    inputs = _inputs()
    if inputs.error:
        return _unavailable("fix", task_fix.__doc__, inputs.error)
    config, _, plan = inputs.require()
    return {
        "actions": [_action(_planned("fix", "fix_step", incomplete=True))],
        "file_dep": [_p(plan.run_dir.bug_report), _p(plan.run_dir.review)],
        "targets": [_p(plan.run_dir.fix_record)],
        "uptodate": [config_changed(config.fix.model_dump(mode="json"))],
        "params": PARAMS,
    }


def _report(config: Config, run_dir: RunDir) -> None:
    from mcpipechekr.steps.summary import summary_step

    summary_step(config, [run_dir])


@answers_help
def task_report() -> dict[str, Any]:
    """Write the run's session summary: what ran, what was found, what was fixed, costs."""
    inputs = _inputs()
    if inputs.error:
        return _unavailable("report", task_report.__doc__, inputs.error)
    config, _, plan = inputs.require()
    deps = [plan.run_dir.bug_report, plan.run_dir.review, plan.run_dir.fix_record]
    return {
        "actions": [_action(_report, config, plan.run_dir)],
        "file_dep": [_p(plan.run_dir.bug_report)] + [_p(p) for p in deps[1:] if p.exists()],
        "targets": [_p(plan.run_dir.session_summary)],
        "params": PARAMS,
    }


# ---------------------------------------------------------------------------------------------------------
# Baseline: explicit, or by the loop before it evaluates; only tasks with no entry or a stale one.


def _baseline() -> bool:
    """Fails the task when a task's baseline could not be obtained (its entry is written with score 0)."""
    from mcpipechekr.steps.baseline import baseline_step

    settings = current_settings()
    outcome = baseline_step(
        load_graph_config(settings),
        task_ids=settings.task_ids,
        tags=settings.tags,
        regenerate=settings.regenerate_baseline,
    )
    return not outcome.problems


def _baseline_complete() -> bool:
    from mcpipechekr.baseline import read_baseline

    inputs = _inputs()
    if inputs.config is None or inputs.settings.regenerate_baseline:
        return False
    try:
        baseline = read_baseline(inputs.config)
    except UserError:
        return False
    if baseline is None or not all(baseline.entry(task.task_id) for task in inputs.tasks):
        return False
    return not _stale_for_planned_run(baseline, inputs)


def _stale_for_planned_run(baseline: Baseline, inputs: GraphInputs) -> bool:
    """True when a selected task's entry was made against other tools than the planned run's tools.json.

    Without that file (no run of the server as it is now) it cannot be told here, so the step runs
    whenever an entry recorded its tools: `build_baseline` asks the server itself.
    """
    from mcpipechekr.artifacts import ToolsSnapshot, read_model

    selected = {task.task_id for task in inputs.tasks}
    tools = inputs.plan.run_dir.tools if inputs.plan is not None else None
    if tools is None or not tools.exists():
        return any(
            entry.task_id in selected and entry.tools_hash and entry.method != "manual"
            for entry in baseline.tasks
        )
    try:
        tools_hash = read_model(tools, ToolsSnapshot).tools_hash
    except UserError:
        return True
    return any(task_id in selected for task_id in baseline.stale_tasks(tools_hash))


@answers_help
def task_baseline() -> dict[str, Any]:
    """Phase 0: the accepted answer of each task → runs/baseline.json (new or stale entries, unless asked)."""
    return {"actions": [_action(_baseline)], "uptodate": [_baseline_complete], "params": PARAMS}


# ---------------------------------------------------------------------------------------------------------
# The loop.
