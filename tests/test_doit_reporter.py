"""What doit prints on this graph: one line per task, failures in words, and `--help` after a task name."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from doit.exceptions import TaskError, TaskFailed
from doit.task import Task
from project import copy_project, doit

from mcpipechekr._util import progress
from mcpipechekr.graph import flags
from mcpipechekr.graph import reporter as doit_reporter


@pytest.fixture
def reporter(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[doit_reporter.Reporter, io.StringIO]]:
    """The graph's reporter writing to a buffer, with the flags of a plain `doit loop`."""
    monkeypatch.setattr(flags, "_override", flags.Settings())
    monkeypatch.setattr(doit_reporter, "_ending", doit_reporter._Ending())
    out = io.StringIO()
    shown = doit_reporter.Reporter(out, {})
    yield shown, out
    for name in list(shown._activities):  # a task the test left running: its progress line ends here
        shown._end_activity(task(name))
    assert progress.current() is None
    progress.set_quiet(False)  # the reporter set it from the flags: later tests start as a plain doit would


def task(name: str) -> Task:
    return Task(name, [(lambda: True, [])])


def test_a_task_gets_one_line_however_many_builds_of_the_iteration_meet_it(
    reporter: tuple[doit_reporter.Reporter, io.StringIO],
) -> None:
    shown, out = reporter
    shown.execute_task(task("lint"))
    shown.add_success(task("lint"))
    for _ in range(3):  # the loop's trace build, baseline build, evaluate+review build
        shown.skip_uptodate(task("lint"))
        shown.skip_uptodate(task("trace:oldest-open-ticket__demo__r001"))
    shown.skip_uptodate(task("_tools"))  # private tasks are never listed
    assert out.getvalue() == ".  lint\n-- trace:oldest-open-ticket__demo__r001\n"
    doit_reporter._ending.shown.clear()  # what the loop does at each new iteration
    shown.skip_uptodate(task("lint"))
    assert out.getvalue().endswith("-- lint\n")


def test_quiet_leaves_out_the_up_to_date_tasks(
    reporter: tuple[doit_reporter.Reporter, io.StringIO], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(flags, "_override", flags.Settings(quiet=True))
    shown, out = reporter
    shown.skip_uptodate(task("lint"))
    shown.execute_task(task("evaluate:run-20260304-001"))
    assert out.getvalue() == ".  evaluate:run-20260304-001\n"


def test_a_step_that_returned_false_is_named_in_words_without_the_actions_repr(
    reporter: tuple[doit_reporter.Reporter, io.StringIO],
) -> None:
    shown, out = reporter
    stopped = task("review")
    shown.execute_task(stopped)
    failed = TaskFailed("Python Task failed: '<function _planned.<locals>.run at 0x7f>' returned False")
    shown.add_failure(stopped, failed)
    shown.complete_run()
    assert out.getvalue() == ".  review\nreview: stopped (its reason is above)\n"


def test_a_failure_already_reported_as_a_user_error_adds_nothing(
    reporter: tuple[doit_reporter.Reporter, io.StringIO],
) -> None:
    shown, out = reporter
    doit_reporter._ending.reported = True  # `_action` printed `error: …` for it
    shown.add_failure(task("fix"), TaskFailed("returned False"))
    assert out.getvalue() == ""


def test_an_exception_that_is_not_a_user_error_keeps_its_traceback(
    reporter: tuple[doit_reporter.Reporter, io.StringIO],
) -> None:
    shown, out = reporter
    try:
        raise RuntimeError("a bug to report")
    except RuntimeError as exc:
        error = TaskError("Python Task error", exc)
    shown.add_failure(task("evaluate:run-20260304-001"), error)
    assert "TaskError" in out.getvalue() and "a bug to report" in out.getvalue()


def test_help_after_a_task_name_prints_its_flags_and_runs_nothing(
    tmp_path: Path, emailindex_env: dict[str, str]
) -> None:
    project = copy_project(tmp_path)
    for argv in (["loop", "--help"], ["lint", "-h"]):
        shown = doit(project, emailindex_env, *argv, timeout=120)
        assert shown.returncode == 0, shown.stdout + shown.stderr
        assert shown.stdout.startswith(f"{argv[0]}  ")
        assert "--phase1-provider=ARG" in shown.stdout and "--quiet" in shown.stdout
        assert "Error parsing" not in shown.stdout + shown.stderr
        assert f".  {argv[0]}" not in shown.stdout  # the task's own line is left out: nothing ran
    assert not (project / "runs").exists()  # no run planned, no server started
    assert not (project / ".mcpipechekr" / "project.lock").exists()
