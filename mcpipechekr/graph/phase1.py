"""Phase 1's targets: one trace per attempt, and `_phase1`, which builds them at `--concurrency`.

doit runs targets one after another unless told `-n N`; `_phase1` runs first
and builds the traces the command line needs in threads, in a nested
invocation, with servers started ahead for their attempts.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from doit.tools import config_changed

from mcpipechekr._util import progress
from mcpipechekr._util.hashing import sha256_json
from mcpipechekr.artifacts.runstate import keeps_traces
from mcpipechekr.artifacts.trace import trace_path
from mcpipechekr.config import Config
from mcpipechekr.graph import reporter
from mcpipechekr.graph.actions import _action, _p, _unavailable, answers_help
from mcpipechekr.graph.flags import _LONG, PARAMS, Settings, current_settings, doit_argv
from mcpipechekr.graph.inputs import _inputs
from mcpipechekr.graph.invocations import build, builds_nothing
from mcpipechekr.runplan import RunPlan
from mcpipechekr.tasks import Task


def _attempt_digest(config: Config, task: Task, runner: str) -> str:
    """What one trace depends on besides the server: the task's definition, the model and the limits."""
    return sha256_json(
        {
            "task": task.model_dump(mode="json", exclude={"split"}),  # the agent never sees the split
            "provider": str(config.providers.phase1),
            "runner": runner,
            "timeouts": config.timeouts.model_dump(mode="json"),
        }
    )


@answers_help
def task_trace() -> Iterator[dict[str, Any]]:
    """Phase 1: run each task blind with the phase-1 model → runs/{run-id}/traces/ (one target each)."""
    inputs = _inputs()
    if inputs.error:
        yield _unavailable("trace", task_trace.__doc__, inputs.error)
        return
    config, tasks, plan = inputs.require()
    yield {"basename": "trace", "name": None, "doc": task_trace.__doc__, "params": PARAMS}
    spec = config.providers.phase1
    resume = _resuming(plan)
    for task in tasks:
        for repetition in range(1, inputs.settings.repeat + 1):
            target = trace_path(plan.run_dir, task.task_id, str(spec), repetition)
            if plan.shard is not None and target.stem not in plan.shard.attempts:
                continue  # another shard's (`--shard K/N`)

            def attempt(one: Task = task, number: int = repetition) -> None:  # doit reserves `task`
                from mcpipechekr.runners.engine import Attempt
                from mcpipechekr.steps.trace import trace_step

                planned = Attempt(one, spec, number)
                phase1 = progress.current()  # the loop's Phase 1 line, when the loop runs this trace
                if phase1 is not None:
                    phase1.started()
                try:
                    trace_step(
                        config,
                        plan.run_dir,
                        [planned],
                        runner=inputs.settings.runner,
                        keep_builtin_tools=inputs.settings.keep_builtin_tools,
                        opencode_mode=inputs.settings.opencode_mode,
                        resume=resume,
                        keep_runners=True,  # one agent server for all the targets (runners/kept.py)
                    )
                finally:
                    if phase1 is not None:
                        # "pending": traced before this process (a resumed run), not a failure
                        phase1.finished(failed=planned.state not in ("completed", "pending"))

            yield {
                "name": target.stem,
                "actions": [_action(attempt)],
                "task_dep": ["lint", "_phase1"],
                "file_dep": [_p(plan.run_dir.tools)],
                "targets": [_p(target)],
                "uptodate": [config_changed(_attempt_digest(config, task, inputs.settings.runner))],
                "params": PARAMS,
            }


def _resuming(plan: RunPlan) -> bool:
    """Whether the planned run is resumed: a run killed outright left finished traces doit has no record
    of, and they are kept (`keeps_traces`)."""
    return plan.reused and keeps_traces(plan.run_dir)


def _phase1() -> bool:
    """The traces this doit run needs, built at `--concurrency` in threads before doit reaches them.

    doit runs its targets one after another unless told `-n N`, and the loop's Phase 1 is the one place
    that tells it; `doit evaluate` (or `review`, `trace`, a bug report's path) would trace a run's
    attempts one by one. Every trace target depends on this task, so it runs first: it builds the
    traces the command line asks for (the named `trace:` targets, else the planned run's) in a nested
    invocation, as the loop does, and doit then finds them up to date. Nothing to do under the loop,
    inside its own nested build, with `--concurrency 1`, or when doit was told to run in parallel itself
    (`-n N`: the targets are then in its own workers already).
    """
    settings = current_settings()
    if reporter._ending.nesting > 0 or settings.concurrency <= 1 or _doit_parallel(doit_argv()):
        return True
    config, tasks, plan = _inputs().require()
    named = [word for word in _selected(doit_argv()) if word.startswith("trace:")]
    targets = named if named and len(named) == len(_selected(doit_argv())) else ["trace"]
    if builds_nothing(targets, besides=frozenset({"_phase1"})):
        return True  # every trace is up to date: no servers started ahead, and the trace step not imported
    # The nested build works in the run this invocation planned: the same settings, the plan kept.
    return _build_phase1(config, tasks, plan, settings, targets, replan=False) == 0


def _doit_parallel(argv: list[str]) -> bool:
    """Whether doit's own `-n N`/`--process N` asks for more than one worker."""
    for index, word in enumerate(argv):
        name, _, inline = word.partition("=")
        if name in ("-n", "--process"):
            value = inline or (argv[index + 1] if index + 1 < len(argv) else "")
        elif word.startswith("-n") and word[2:].isdigit():
            value = word[2:]
        else:
            continue
        return value.isdigit() and int(value) > 1
    return False


def _selected(argv: list[str]) -> list[str]:
    """The tasks and targets named on a doit command line (after `run`, if given)."""
    values = {index + 1 for index, word in enumerate(argv) if _takes_value(word)}
    words = [word for index, word in enumerate(argv) if not word.startswith("-") and index not in values]
    return words[1:] if words[:1] == ["run"] else words


_DOIT_VALUE_OPTIONS = frozenset(
    {"-n", "-P", "-f", "-d", "-r", "-o", "--process", "--parallel-type", "--file", "--dir", "--db-file"}
    | {"--dep-file", "--backend", "--reporter", "--output-file", "--check_file_uptodate", "--codec-cls"}
)
"""doit's own options whose value is the next word."""


def _takes_value(word: str) -> bool:
    """A flag, doit's or ours, given without `=`, whose value is the next word."""
    if word in _DOIT_VALUE_OPTIONS:
        return True
    if not word.startswith("--") or "=" in word:
        return False
    param = _LONG.get(word[2:])
    return param is not None and param.get("type") is not bool


def _build_phase1(
    config: Config,
    tasks: list[Task],
    plan: RunPlan,
    settings: Settings,
    targets: list[str],
    replan: bool = True,
) -> int:
    """Build `targets` (trace targets) at `--concurrency`, with servers started ahead for their attempts."""
    from mcpipechekr.runners.engine import plan_attempts
    from mcpipechekr.steps.trace import pending_attempts, phase1_pool

    attempts = plan_attempts(tasks, [config.providers.phase1], settings.repeat)
    expected = pending_attempts(plan.run_dir, attempts)
    with phase1_pool(config, plan.run_dir, expected, settings.concurrency):
        with progress.Activity("phase 1", total=len(tasks) * settings.repeat):
            return build(targets, settings=settings, parallel=settings.concurrency, replan=replan)


@answers_help
def task__phase1() -> dict[str, Any]:
    """Phase 1 at --concurrency: the traces this invocation needs, in threads (see `_phase1`)."""
    inputs = _inputs()
    if inputs.error:
        return _unavailable("_phase1", task__phase1.__doc__, inputs.error)
    return {"actions": [_action(_phase1)], "uptodate": [False], "params": PARAMS}
