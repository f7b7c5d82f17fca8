"""doit run inside this process: `run_doit` for the CLI's `mcpipechekr doit`/`loop`, `build` for the
loop's and Phase 1's nested invocations.

Both load the tasks from `mcpipechekr.graph`, the package's front door, so a
nested invocation sees the same graph, flags and state as the one around it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from mcpipechekr._util import project_lock
from mcpipechekr.errors import UserError
from mcpipechekr.graph import flags, reporter
from mcpipechekr.graph.flags import Settings, _preparing
from mcpipechekr.graph.inputs import graph_inputs
from mcpipechekr.graph.project import STATE_DIR, _open_dep_file, project_folder
from mcpipechekr.graph.reporter import DOIT_BEFORE_TASKS, _Ending
from mcpipechekr.server import kept as kept_servers
from mcpipechekr.steps.stage import interrupt_runs

_GRAPH = "mcpipechekr.graph"  # the module doit loads the tasks and DOIT_CONFIG from


def run_doit(argv: list[str], project: Path | None = None) -> int:
    """`doit ARGV` on this graph in `project` (default: the working directory), without a dodo.py there.

    What `mcpipechekr doit …` and `mcpipechekr loop …` run: the same tasks, the
    same state folder and lock as a dodo.py importing `mcpipechekr.dodo`.
    """
    from doit.cmd_base import ModuleTaskLoader
    from doit.doit_cmd import DoitMain

    from mcpipechekr._util import commands

    if project is not None:
        os.chdir(project)
    flags._argv = list(argv)
    graph_inputs.cache_clear()
    commands.doit_through_cli = True
    reporter._ending = _Ending()  # a fresh invocation: nothing failed yet
    excepthook = sys.excepthook
    try:
        STATE_DIR.mkdir(exist_ok=True)
        _open_dep_file()
        # Held for this invocation only: a process may run several (tests, a Python caller).
        holding = project_lock.project_lock(project_folder()) if _preparing() else contextlib.nullcontext()
        with holding, kept_servers.keeping():
            try:
                status = DoitMain(ModuleTaskLoader(sys.modules[_GRAPH])).run(list(argv))
            finally:
                _stop_kept_runners()
    finally:
        sys.excepthook = excepthook  # the CLI reports Ctrl-C itself
        flags._argv = None
        commands.doit_through_cli = False
    # doit's 3 is "before any task ran": a flag or command it could not parse, which the CLI calls a usage
    # error (2) like any other command's.
    return UserError.exit_code if status == DOIT_BEFORE_TASKS else status


def build(targets: list[str], *, settings: Settings, parallel: int = 1, replan: bool = True) -> int:
    """Run doit on `targets` in this process, re-planning the run first (a fix changes the server).

    Without `replan`, what the invocation around this one planned stays as it was (`_phase1`: its own
    tasks go on in the run it planned once the nested build is done).
    """
    from doit.cmd_base import ModuleTaskLoader
    from doit.doit_cmd import DoitMain

    outer, flags._override = flags._override, settings
    if replan:
        graph_inputs.cache_clear()
    args = ["run", *(["-n", str(parallel), "-P", "thread"] if parallel > 1 else []), *targets]
    reporter._ending.nesting += 1
    try:
        return DoitMain(ModuleTaskLoader(sys.modules[_GRAPH])).run(args)
    except KeyboardInterrupt:  # the trace threads never see it: their runs are marked here
        interrupt_runs("interrupted by the user (Ctrl-C)")
        raise
    finally:
        reporter._ending.nesting -= 1
        flags._override = outer
        _stop_kept_runners()  # the trace targets' agent server: the next build may be after a fix


def builds_nothing(targets: list[str], *, besides: frozenset[str] = frozenset()) -> bool:
    """Whether `build(targets)` would run no task but those named in `besides`: every task it needs is up
    to date by doit's own checks (file hashes, `uptodate`, targets), read from the same dependency file
    and task definitions the nested invocation would use. Anything doit would not call up to date (an
    unknown target, a task without a record, a missing dependency) counts as work: the build happens.
    """
    from doit.control import TaskControl
    from doit.dependency import Dependency, SqliteDB
    from doit.exceptions import InvalidCommand, InvalidDodoFile, InvalidTask
    from doit.loader import load_tasks

    graph = sys.modules[_GRAPH]
    try:
        control = TaskControl(load_tasks(vars(graph), allow_delayed=True))
        control.process(targets)
    except (InvalidCommand, InvalidDodoFile, InvalidTask):
        return False
    needed: set[str] = set()
    waiting = list(control.selected_tasks or [])
    while waiting:
        name = waiting.pop()
        if name not in needed:
            needed.add(name)
            task = control.tasks[name]
            waiting += [*task.task_dep, *task.setup_tasks, *task.calc_dep]
    dependencies = Dependency(SqliteDB, graph.DOIT_CONFIG["dep_file"])
    try:
        return all(
            dependencies.get_status(control.tasks[name], control.tasks).status == "up-to-date"
            for name in sorted(needed - besides)
            if control.tasks[name].actions
        )
    finally:
        dependencies.close()


def _stop_kept_runners() -> None:
    """Stop the agent servers that doit's trace targets shared (runners/kept.py), if any were kept."""
    kept = sys.modules.get("mcpipechekr.runners.kept")
    if kept is not None:
        kept.close_kept()
