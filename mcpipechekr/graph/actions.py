"""What every task creator wraps its work in: actions that print a user error, and the `--help` task.

An action prints a user error as one line instead of a traceback and fails the
task when the call returns False (doit's own rule for Python actions).
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcpipechekr._util.console import console
from mcpipechekr._util.yamlsrc import display_path
from mcpipechekr.errors import InputError, Interrupted, UserError, as_user_error
from mcpipechekr.graph import reporter
from mcpipechekr.graph.flags import PARAMS, current_settings
from mcpipechekr.graph.reporter import stop_interrupted

# when the call returns False (doit's own rule for Python actions).


def _action(fn: Callable[..., Any], *args: Any) -> tuple[Callable[..., bool], list[Any]]:
    @functools.wraps(fn)
    def run(*call_args: Any, **_params: Any) -> bool:
        try:
            return fn(*call_args) is not False
        except (UserError, KeyboardInterrupt, OSError, sqlite3.Error) as exc:
            error = as_user_error(exc)
            if error is None:
                raise
            if isinstance(error, Interrupted):
                stop_interrupted()
            console.print(f"[bold red]error:[/] {error.format_message()}", markup=True, soft_wrap=True)
            ending = reporter._ending
            ending.reported = True
            ending.failed_on_input = ending.failed_on_input or isinstance(error, InputError)
            return False

    return (run, list(args))


# ---------------------------------------------------------------------------------------------------------
# How doit ends: the statuses of the CLI. doit answers a failed task with 1, an error before any task with
# 3, and Ctrl-C with a traceback; a problem in the inputs (`InputError`) ends it with 2, Ctrl-C with 130 and


def _unavailable(name: str, doc: str | None, error: str) -> dict[str, Any]:
    def fail() -> None:
        raise InputError(error)

    return {"basename": name, "doc": doc, "actions": [_action(fail)], "params": PARAMS, "uptodate": [False]}


def answers_help(creator: Callable[[], Any]) -> Callable[[], Any]:
    """A task creator that, under `--help` (`-h`), makes a task printing the task's flags and nothing else.

    doit reads a task's flags with the task's own parameters only (`params`), so `--help` after a task
    name was an unknown option and ended in a parser error. It is one of the parameters now, and when
    it is given every task is made without dependencies, targets or work: `doit loop --help` starts no
    server and plans no run, and prints what `doit help loop` prints.
    """

    @functools.wraps(creator)
    def create() -> Any:
        if not current_settings().help:
            return creator()
        name = creator.__name__.removeprefix("task_")
        return {
            "basename": name,
            "doc": creator.__doc__,
            "actions": [(print_task_help, [name, creator.__doc__ or ""])],
            "params": PARAMS,
            "uptodate": [False],
            "verbosity": 2,
        }

    return create


def print_task_help(name: str, doc: str) -> None:
    """The task's first docstring line and its flags, in `doit help TASK`'s words."""
    from doit.cmdparse import CmdOption, TaskParse

    summary = next((line.strip() for line in doc.splitlines() if line.strip()), "")
    print(f"{name}  {summary}")
    for option in TaskParse([CmdOption(param) for param in PARAMS]).options:
        print("\n".join(option.help_doc()))


def _p(path: str | Path) -> str:
    """A path as doit names it, relative to the project when inside it, so that
    `doit runs/run-20261202-001/bug_report.json` finds its task."""
    return display_path(Path(path).absolute())
