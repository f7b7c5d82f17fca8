"""The doit build graph: every artifact a target, every action a call into `steps`.

`dodo.py` at the project root only imports the `task_*` functions and
`DOIT_CONFIG` from here.

The graph of one run (`runs/{run-id}/`, chosen by `runplan.plan_run`):

    _tools ─► tools.json ─┬─► lint ─► tef_report.json ─► trace:<task>__<model>__rNNN ─┐
                          └─► check ─► check_report.json                            │
    runs/baseline.json (`doit baseline`; stale entries rebuilt by `loop`) ──────────┤
                                         evaluate:<run> ◄─ traces/*.json ◄──────────┘
                                           ─► bug_report.json, phase2_narrative.md
                                         review ─► review.json (approves that exact bug report)
                                         fix ─► fix.json (one commit per bug; server restarted)
                                         report ─► session_summary.md

Up-to-date checks are doit's: content hashes of `file_dep`s, plus
`config_changed` values for what is not a file (the run identity, a task's
definition and model). `loop` drives iterations: each one plans its run (a fix
commit changes the server's source, hence a new run) and builds that run's
targets with a nested doit invocation, so every artifact of every iteration is
recorded in the one dependency database.

Flags (`--config`, `--task`, `--phase1-provider`, `--repeat`, `--new-run`, …)
apply to the whole invocation: they are read when the graph is built, because
they decide which run folder the targets live in, and every task accepts them.

The project is the folder doit runs in: the folder of the dodo.py it loaded
(doit changes into it; `doit -d DIR` picks another), or the folder
`mcpipechekr doit`/`mcpipechekr loop` are pointed at. Every relative path the
graph uses, `--config` included, is taken from there, and the doit state lives
in its `.mcpipechekr/`. `mcpipechekr.dodo` is the module doit loads: a project's
dodo.py only imports it, so the graph always comes from the installed package.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import sqlite3
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from doit.exceptions import TaskFailed
from doit.reporter import ConsoleReporter
from doit.tools import config_changed

from mcpipechekr._util import progress, project_lock
from mcpipechekr._util.console import console, err_console
from mcpipechekr._util.fields import MAX_CONCURRENCY, MAX_REPEAT
from mcpipechekr._util.hashing import sha256_json
from mcpipechekr._util.stops import INTERRUPTED_EXIT, end_owned_groups, interrupted_line
from mcpipechekr._util.yamlsrc import display_path
from mcpipechekr.artifacts import RunDir, list_runs, list_traces
from mcpipechekr.artifacts.trace import trace_path
from mcpipechekr.config import PROVIDER_FLAGS, Config, ConfigOverrides, load_config, provider_flag
from mcpipechekr.errors import InputError, Interrupted, UserError, as_user_error
from mcpipechekr.runplan import RunPlan
from mcpipechekr.runshard import SHARD_HELP, parse_shard
from mcpipechekr.server import kept as kept_servers
from mcpipechekr.steps.stage import ALLOW_INCOMPLETE_HELP, interrupt_runs, plan_run_folder
from mcpipechekr.tasks import Task, load_tasks, select_tasks

if TYPE_CHECKING:
    from mcpipechekr.artifacts.baseline import Baseline

STATE_DIR = Path(".mcpipechekr")
DEP_FILE = str(STATE_DIR / "doit.sqlite")

DOIT_CONFIG: dict[str, Any] = {
    "default_tasks": ["loop"],
    "dep_file": DEP_FILE,
    # sqlite3 writes only the tasks each invocation ran, so the loop's nested invocations and the outer
    # one never overwrite each other's records; the project lock keeps separate processes apart.
    "backend": "sqlite3",
    "verbosity": 2,
    "action_string_formatting": "new",
}

# ---------------------------------------------------------------------------------------------------------
# Flags: doit task parameters, read once for the whole invocation.

PARAMS: list[dict[str, Any]] = [
    {"name": "config", "long": "config", "default": "config.yaml", "help": "The config file."},
    {
        "name": "task_ids",
        "long": "task",
        "type": list,
        "default": [],
        "help": "Only this task; repeatable.",
    },
    {"name": "tags", "long": "tag", "type": list, "default": [], "help": "Only tasks with this tag."},
    {"name": "repeat", "long": "repeat", "type": int, "default": 1, "help": "Attempts per task (Phase 1)."},
    {
        "name": "concurrency",
        "long": "concurrency",
        "type": int,
        "default": 4,
        "help": "Phase 1 attempts at once in `loop`.",
    },
    {
        "name": "runner",
        "long": "runner",
        "default": "native",
        "help": "Phase 1 agent for real models: native (pydantic-ai), opencode or claude-code.",
    },
    {
        "name": "keep_builtin_tools",
        "long": "keep-builtin-tools",
        "type": bool,
        "default": False,
        "help": "opencode / claude-code runners: leave the agent's own tools (shell, files) on.",
    },
    {
        "name": "opencode_mode",
        "long": "opencode-mode",
        "default": "serve",
        "help": "opencode runner: serve (one `opencode serve` per trace step) or run (`opencode run` "
        "per attempt).",
    },
    {
        "name": "new_run",
        "long": "new-run",
        "type": bool,
        "default": False,
        "help": "Start a new run folder even when the inputs match the latest run.",
    },
    {"name": "shard", "long": "shard", "default": "", "help": f"`trace`: {SHARD_HELP}"},
    {
        "name": "allow_incomplete",
        "long": "allow-incomplete",
        "type": bool,
        "default": False,
        "help": f"`evaluate`, `review`, `fix`: {ALLOW_INCOMPLETE_HELP[0].lower()}{ALLOW_INCOMPLETE_HELP[1:]}",
    },
    {
        "name": "web_review",
        "long": "web-review",
        "type": bool,
        "default": False,
        "help": "`review`, `loop`: decide in the browser (a page on 127.0.0.1, its address printed) "
        "instead of at the terminal; config.yaml's `review.web: true` does the same.",
    },
    {
        "name": "regenerate_baseline",
        "long": "regenerate-baseline",
        "type": bool,
        "default": False,
        "help": "`baseline`: baseline the selected tasks again, replacing their entries.",
    },
    {
        "name": "quiet",
        "long": "quiet",
        "type": bool,
        "default": False,
        "help": "No live progress display, and no line for a task found up to date.",
    },
    {
        "name": "help",
        "long": "help",
        "short": "h",
        "type": bool,
        "default": False,
        "help": "Show the task's flags and run nothing (as `doit help TASK`).",
    },
    # One per phase, from the table the click options come from too.
    *[{"name": flag.dest, "long": flag.name, "default": "", "help": flag.help} for flag in PROVIDER_FLAGS],
]
_LONG = {param["long"]: param for param in PARAMS}
_PROVIDER_PHASE = {flag.dest: flag.phase for flag in PROVIDER_FLAGS}


@dataclass(frozen=True)
class Settings:
    """The flags of this invocation, with their defaults."""

    config: str = "config.yaml"
    task_ids: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    repeat: int = 1
    concurrency: int = 4
    runner: str = "native"
    keep_builtin_tools: bool = False
    opencode_mode: str = "serve"
    new_run: bool = False
    shard: str = ""
    allow_incomplete: bool = False
    web_review: bool = False
    regenerate_baseline: bool = False
    quiet: bool = False
    help: bool = False
    providers: tuple[tuple[str, str], ...] = ()

    def given(self) -> dict[str, Any]:
        """The flags that differ from their defaults, as the manifest records them."""
        given: dict[str, Any] = {}
        for flag in fields(self):
            value = getattr(self, flag.name)
            if flag.name not in _UNRECORDED and value != flag.default:
                given[flag.name] = list(value) if isinstance(value, tuple) else value
        given.update({provider_flag(phase).dest: value for phase, value in self.providers})
        return given


# Providers are recorded one flag per phase; regenerate_baseline concerns the baseline, allow_incomplete
# what the later steps accept, quiet and help what is printed, not the run.
_UNRECORDED = frozenset(
    {"providers", "regenerate_baseline", "allow_incomplete", "web_review", "quiet", "help"}
)


def settings_from_argv(argv: list[str]) -> Settings:
    """The known flags wherever they appear on the doit command line; anything else is doit's business.

    doit parses a task's params only when it runs the task, but these flags
    decide which run folder the graph's targets live in, so the graph needs them
    before it exists. Every flag is taken from `PARAMS`: this reader knows no
    flag of its own.
    """
    found: dict[str, Any] = {}
    providers: dict[str, str] = {}
    index = 0
    while index < len(argv):
        word = argv[index]
        index += 1
        if word == "-h":  # the one short flag, doit's own help flag for a task's parameters
            found["help"] = True
            continue
        if not word.startswith("--"):
            continue
        name, has_value, inline = word[2:].partition("=")
        param = _LONG.get(name)
        if param is None:
            continue
        if param.get("type") is bool:
            found[param["name"]] = True
            continue
        if not has_value:
            if index >= len(argv):
                break
            inline = argv[index]
            index += 1
        key = param["name"]
        if key in _PROVIDER_PHASE:
            providers[_PROVIDER_PHASE[key]] = inline
        elif param.get("type") is list:
            found[key] = (*found.get(key, ()), inline)
        elif param.get("type") is int:  # counts (repeat, concurrency): at least 1
            try:
                found[key] = max(1, int(inline))
            except ValueError:
                found[key] = 1  # reported by doit itself when it parses the task's parameters
        else:
            found[key] = inline
    return Settings(**found, providers=tuple(sorted(providers.items())))


_override: Settings | None = None  # set by the loop for its nested invocations
_argv: list[str] | None = None  # doit's arguments when doit runs inside another command (`run_doit`)


def doit_argv() -> list[str]:
    """The arguments of this doit invocation: doit's own command line, or those given to `run_doit`."""
    return sys.argv[1:] if _argv is None else _argv


def current_settings() -> Settings:
    return _override or settings_from_argv(doit_argv())


# ---------------------------------------------------------------------------------------------------------
# What the graph is built from: config, tasks and the planned run, or the reason they are unavailable.


@dataclass(frozen=True)
class GraphInputs:
    settings: Settings
    config: Config | None = None
    tasks: list[Task] = field(default_factory=list)
    plan: RunPlan | None = None
    error: str | None = None

    def require(self) -> tuple[Config, list[Task], RunPlan]:
        if self.error or self.config is None or self.plan is None:
            raise InputError(self.error or "no configuration")
        return self.config, self.tasks, self.plan


def load_graph_config(settings: Settings) -> Config:
    overrides = ConfigOverrides(providers={phase: value for phase, value in settings.providers if value})
    return load_config(settings.config, overrides)


@functools.cache
def graph_inputs(settings: Settings) -> GraphInputs:
    """Config, selected tasks and the run plan, computed once per graph load."""
    try:
        _check_counts(settings)
        shard = parse_shard(settings.shard) if settings.shard else None
        config = load_graph_config(settings)
        tasks = select_tasks(load_tasks(config.paths.tasks), settings.task_ids, settings.tags)
        plan = plan_run_folder(
            config,
            tasks,
            runner=settings.runner,
            keep_builtin_tools=settings.keep_builtin_tools,
            repeat=settings.repeat,
            new_run=settings.new_run,
            parameters=settings.given(),
            prepare=_preparing(),
            shard=shard,
        )
    except UserError as exc:
        return GraphInputs(settings, error=exc.message)
    return GraphInputs(settings, config, tasks, plan)


def _check_counts(settings: Settings) -> None:
    """`--repeat` and `--concurrency` within their bounds, as the CLI's own flags are."""
    bounds = [("--repeat", settings.repeat, MAX_REPEAT)]
    bounds.append(("--concurrency", settings.concurrency, MAX_CONCURRENCY))
    for flag, value, most in bounds:
        if value > most:
            shown = str(value) if len(str(value)) <= 12 else f"a number of {len(str(value))} digits"
            raise InputError(f"{flag}: must be at most {most}, not {shown}")


def _inputs() -> GraphInputs:
    return graph_inputs(current_settings())


# ---------------------------------------------------------------------------------------------------------
# One process at a time: two doit invocations in one project would race for run folders and the server.

_READ_ONLY_COMMANDS = {"list", "help", "info", "tabcompletion", "dumpdb"}


def _command(argv: list[str]) -> str:
    words = [word for word in argv if not word.startswith("-")]
    return words[0] if words else "run"


def _preparing() -> bool:
    """True when this invocation may change things (not `doit list`, `doit help`, `doit loop --help`, …)."""
    argv = doit_argv()
    return _command(argv) not in _READ_ONLY_COMMANDS and not settings_from_argv(argv).help


def open_project() -> None:
    """Ready the project folder (the working directory) for doit: its state folder, and the lock.

    doit opens its dependency file in the state folder before any task runs, even for `list`.
    """
    sys.excepthook = _interrupted_anywhere
    kept_servers.keep_until_exit()  # one start of the server for the steps of this doit run
    try:
        STATE_DIR.mkdir(exist_ok=True)
        hold_project_lock()
        _open_dep_file()
    except (OSError, UserError) as exc:
        error = as_user_error(exc)
        if error is None:
            raise
        console.print(f"[bold red]error:[/] {error.format_message()}", markup=True, soft_wrap=True)
        raise SystemExit(UserError.exit_code) from None


def _open_dep_file() -> None:
    """Make sure doit can write its dependency file, which it opens before any task runs.

    doit reports a file it cannot create (a full disk, a read-only folder) as a
    corrupt one, with a traceback and status 3; this says what is wrong instead.
    """
    try:
        connection = sqlite3.connect(DEP_FILE)
        try:
            connection.execute(
                "create table if not exists doit (task_id text not null primary key, task_data json)"
            )
            connection.commit()
        finally:
            connection.close()
    except sqlite3.OperationalError as exc:
        raise UserError(
            f"cannot write doit's dependency file {DEP_FILE}: {exc}; is the disk full, "
            "or the folder read-only?"
        ) from None


def project_folder() -> Path:
    """The project this invocation works on: the folder of its config file, the one `mcpipechekr` commands
    given the same config lock too."""
    return Path(current_settings().config).parent


def hold_project_lock() -> None:
    """Take the project's lock (`_util/project_lock.py`) until this process ends, unless only reading.

    Reentrant: the loop's nested invocations run in this process and share it.
    """
    if _preparing():
        _hold(project_folder())


def _hold(project: Path) -> None:
    try:
        project_lock.hold_project_lock(project)
    except UserError as exc:  # doit imports dodo.py outside any click command: print it as click would
        err_console.print(f"error: {exc.format_message()}", markup=False)
        raise SystemExit(exc.exit_code) from None


# ---------------------------------------------------------------------------------------------------------
# Actions: thin wrappers that print a user error as a message instead of a traceback, and fail the task
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
            _ending.reported = True
            _ending.failed_on_input = _ending.failed_on_input or isinstance(error, InputError)
            return False

    return (run, list(args))


# ---------------------------------------------------------------------------------------------------------
# How doit ends: the statuses of the CLI. doit answers a failed task with 1, an error before any task with
# 3, and Ctrl-C with a traceback; a problem in the inputs (`InputError`) ends it with 2, Ctrl-C with 130 and
# one line.


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

DOIT_CONFIG["reporter"] = Reporter  # a class: doit takes one from DOIT_CONFIG, not from the command line


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


# ---------------------------------------------------------------------------------------------------------
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
    from mcpipechekr.steps.trace import resume_line

    # A run killed outright left finished traces doit has no record of: while it lacks some, they are kept.
    resume = plan.reused and resume_line(plan.run_dir) is not None
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
    if _ending.nesting > 0 or settings.concurrency <= 1 or _doit_parallel(doit_argv()):
        return True
    config, tasks, plan = _inputs().require()
    named = [word for word in _selected(doit_argv()) if word.startswith("trace:")]
    targets = named if named and len(named) == len(_selected(doit_argv())) else ["trace"]
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


def run_doit(argv: list[str], project: Path | None = None) -> int:
    """`doit ARGV` on this graph in `project` (default: the working directory), without a dodo.py there.

    What `mcpipechekr doit …` and `mcpipechekr loop …` run: the same tasks, the
    same state folder and lock as a dodo.py importing `mcpipechekr.dodo`.
    """
    from doit.cmd_base import ModuleTaskLoader
    from doit.doit_cmd import DoitMain

    from mcpipechekr._util import commands

    global _argv, _ending
    if project is not None:
        os.chdir(project)
    _argv = list(argv)
    graph_inputs.cache_clear()
    commands.doit_through_cli = True
    _ending = _Ending()  # a fresh invocation: nothing failed yet
    excepthook = sys.excepthook
    try:
        STATE_DIR.mkdir(exist_ok=True)
        _open_dep_file()
        # Held for this invocation only: a process may run several (tests, a Python caller).
        holding = project_lock.project_lock(project_folder()) if _preparing() else contextlib.nullcontext()
        with holding, kept_servers.keeping():
            try:
                status = DoitMain(ModuleTaskLoader(sys.modules[__name__])).run(list(argv))
            finally:
                _stop_kept_runners()
    finally:
        sys.excepthook = excepthook  # the CLI reports Ctrl-C itself
        _argv = None
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

    global _override
    outer, _override = _override, settings
    if replan:
        graph_inputs.cache_clear()
    args = ["run", *(["-n", str(parallel), "-P", "thread"] if parallel > 1 else []), *targets]
    _ending.nesting += 1
    try:
        return DoitMain(ModuleTaskLoader(sys.modules[__name__])).run(args)
    except KeyboardInterrupt:  # the trace threads never see it: their runs are marked here
        interrupt_runs("interrupted by the user (Ctrl-C)")
        raise
    finally:
        _ending.nesting -= 1
        _override = outer
        _stop_kept_runners()  # the trace targets' agent server: the next build may be after a fix


def _stop_kept_runners() -> None:
    """Stop the agent servers that doit's trace targets shared (runners/kept.py), if any were kept."""
    kept = sys.modules.get("mcpipechekr.runners.kept")
    if kept is not None:
        kept.close_kept()


def run_loop(**params: Any) -> bool | None:
    """lint → trace → evaluate → review → fix → restart, a new run each iteration, until exit, nothing left
    to commit, every KPI met (`loop.stop_when: kpis_met`) or the cap."""
    from mcpipechekr.steps.report import session_report_step
    from mcpipechekr.steps.review import loop_review_page
    from mcpipechekr.steps.session import (
        committed_fixes,
        ended_at_review,
        exited_at_review,
        kpis_reached,
        start_session,
    )
    from mcpipechekr.steps.summary import summary_step
    from mcpipechekr.steps.trace import resume_line

    settings = current_settings()
    if settings.shard:
        raise InputError(
            "--shard: the loop evaluates and fixes whole runs; trace a shard with `doit trace --shard K/N` "
            "and merge the shards with `mcpipechekr merge`"
        )
    config, _, _ = graph_inputs.__wrapped__(settings).require()  # config and task selection problems first
    start_session(config, runner=settings.runner)  # before any cost: what would stop a later step
    web = settings.web_review or config.review.web
    with loop_review_page(config, enabled=web) as page:  # one page, its progress until each review
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
            _ending.shown.clear()  # a new run: each task gets its line again
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
            if (reached := kpis_reached(config, plan.run_dir)) is not None:  # `loop.stop_when: kpis_met`
                stop = reached
                break
            if build(["review"], settings=settings) != 0:
                _ending.reported = True  # the review said where it stopped and what to type: nothing to add
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


@answers_help
def task_loop() -> dict[str, Any]:
    """Run the loop on the configured server: lint, trace, evaluate, review, fix, restart, again."""
    return {"actions": [_action(run_loop)], "uptodate": [False], "params": PARAMS}
