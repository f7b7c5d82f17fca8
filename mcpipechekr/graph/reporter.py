"""How doit reports and ends under MCPipeChekr: one line per task, and the CLI's exit statuses.

doit answers a failed task with 1, an error before any task with 3, and Ctrl-C
with a traceback; a problem in the inputs (`InputError`) ends it with 2, Ctrl-C
with 130 and one line. `_ending` is what one invocation has seen so far:
`invocations.run_doit` replaces it for each invocation, so the other modules
read it as `reporter._ending`, never by importing the name.
"""

from __future__ import annotations

import os
import signal
import sys
from dataclasses import dataclass, field
from typing import Any

from doit.exceptions import TaskFailed
from doit.reporter import ConsoleReporter

from mcpipechekr._util import progress
from mcpipechekr._util.stops import INTERRUPTED_EXIT, end_owned_groups, interrupted_line
from mcpipechekr.errors import UserError
from mcpipechekr.graph.flags import current_settings


@dataclass
class _Ending:
    failed_on_input: bool = False  # some action stopped on an InputError: the outermost doit exits 2
    reported: bool = False  # the failure doit is about to report was printed already, as one line
    interrupted: bool = False
    nesting: int = 0  # doit invocations inside this one (the loop's `build`)
    shown: set[str] = field(default_factory=set)  # tasks given their line in this iteration of the loop


_ending = _Ending()
DOIT_BEFORE_TASKS = 3  # doit's status for an error before any task ran


def stop_interrupted() -> None:
    """Print the one Ctrl-C line, once, and end doit with status 130 (further Ctrl-C are ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    end_owned_groups()  # servers started by doit's worker threads, which never see the Ctrl-C
    if not _ending.interrupted:
        _ending.interrupted = True
        print(interrupted_line(), file=sys.stderr, flush=True)
    raise SystemExit(INTERRUPTED_EXIT)


class Reporter(ConsoleReporter):
    """doit's console reporter, with one line per task and the endings of every MCPipeChekr command.

    A task gets one line: `.  name` when it runs, `-- name` when it is up to
    date. The loop builds each iteration in several doit invocations that
    share their dependencies (the review depends on every trace), so a task
    already given its line in this iteration is not listed again, and with
    `--quiet` up-to-date tasks are not listed at all.

    A failed task says why in words: a user error has printed its one line
    already (`_action`), so doit's "TaskFailed ... returned False" block, with
    the action's repr, is left out; a step that only returned False is named
    as having stopped. An exception that is not a user error keeps doit's
    traceback: it is a bug to report. When the error was in the inputs (an
    `InputError`: a file, a flag, the disk), the outermost doit exits with
    status 2 instead of doit's 1. Raising SystemExit from `complete_run` is the
    one hook doit leaves for its status: it runs after the dependency file is
    saved and the teardowns ran.
    """

    desc = "console, one line per task, with MCPipeChekr's exit statuses"

    def __init__(self, outstream: Any, options: Any) -> None:
        super().__init__(outstream, options)
        progress.set_quiet(current_settings().quiet)
        self._activities: dict[str, progress.Activity] = {}

    def write(self, text: str) -> None:
        """To doit's output, which is stdout as it is now when doit was given none: while the progress
        line is up, stdout is its proxy, which clears the line first (`_util.progress`)."""
        from doit.cmd_run import opt_outfile

        (sys.stdout if self.outstream is opt_outfile["default"] else self.outstream).write(text)

    def execute_task(self, task: Any) -> None:
        if current_settings().help:  # the task prints its flags, nothing else
            return
        if task.actions and not task.name.startswith("_"):
            _ending.shown.add(task.name)
            self.write(f".  {task.title()}\n")
        if task.actions and task.name.split(":")[0] not in _OWN_DISPLAY:
            # elapsed time while the task works; the fix step adds its agent's last line (`progress.detail`)
            activity = progress.Activity(task.name.lstrip("_"))
            self._activities[task.name] = activity.__enter__()

    def add_success(self, task: Any) -> None:
        self._end_activity(task)

    def _end_activity(self, task: Any) -> None:
        activity = self._activities.pop(task.name, None)
        if activity is not None:
            activity.__exit__(None, None, None)

    def skip_uptodate(self, task: Any) -> None:
        if task.name.startswith("trace:") and (phase1 := progress.current()) is not None:
            phase1.skipped()  # the loop's Phase 1 line counts only the attempts that run
        if task.name.startswith("_") or task.name in _ending.shown or current_settings().quiet:
            return
        _ending.shown.add(task.name)
        self.write(f"-- {task.title()}\n")

    def add_failure(self, task: Any, fail: Any) -> None:
        self._end_activity(task)
        if _ending.reported:
            _ending.reported = False
            return
        if isinstance(fail, TaskFailed) and fail.report:  # an action returned False: its step said why
            self.write(f"{task.name}: stopped (its reason is above)\n")
            return
        super().add_failure(task, fail)

    def complete_run(self) -> None:
        super().complete_run()
        if _ending.failed_on_input and not _ending.interrupted and _ending.nesting == 0:
            raise SystemExit(UserError.exit_code)


# Tasks that show their own progress (the loop's Phase 1 line counts the traces) or wait for a person.
_OWN_DISPLAY = frozenset({"trace", "review", "loop", "_phase1"})


def _interrupted_anywhere(kind: type[BaseException], value: BaseException, traceback: Any) -> None:
    """`sys.excepthook` under the doit command: Ctrl-C outside an action (while doit plans) ends as in one."""
    if issubclass(kind, KeyboardInterrupt):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        end_owned_groups()
        if not _ending.interrupted:
            print(interrupted_line(), file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(INTERRUPTED_EXIT)  # an excepthook cannot choose the exit status otherwise
    sys.__excepthook__(kind, value, traceback)
