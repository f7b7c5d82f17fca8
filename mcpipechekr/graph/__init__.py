"""The doit build graph: every artifact a target, every action a call into `steps`.

`dodo.py` at the project root only imports the `task_*` functions and
`DOIT_CONFIG` from here: this module is what doit loads the graph from (the
nested invocations of `invocations.build` too), so it holds DOIT_CONFIG and
names every task creator; the modules beside it hold the code.

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

from typing import Any

from mcpipechekr.graph.flags import PARAMS, Settings, settings_from_argv
from mcpipechekr.graph.invocations import build, run_doit
from mcpipechekr.graph.loop import run_loop, task_loop
from mcpipechekr.graph.phase1 import task__phase1, task_trace
from mcpipechekr.graph.project import DEP_FILE, open_project
from mcpipechekr.graph.reporter import Reporter
from mcpipechekr.graph.targets import (
    task__tools,
    task_baseline,
    task_check,
    task_evaluate,
    task_fix,
    task_lint,
    task_report,
    task_review,
)

DOIT_CONFIG: dict[str, Any] = {
    "default_tasks": ["loop"],
    "dep_file": DEP_FILE,
    # sqlite3 writes only the tasks each invocation ran, so the loop's nested invocations and the outer
    # one never overwrite each other's records; the project lock keeps separate processes apart.
    "backend": "sqlite3",
    "verbosity": 2,
    "action_string_formatting": "new",
    "reporter": Reporter,  # a class: doit takes one from DOIT_CONFIG, not from the command line
}

__all__ = [
    "DOIT_CONFIG",
    "PARAMS",
    "Settings",
    "build",
    "open_project",
    "run_doit",
    "run_loop",
    "settings_from_argv",
    "task__phase1",
    "task__tools",
    "task_baseline",
    "task_check",
    "task_evaluate",
    "task_fix",
    "task_lint",
    "task_loop",
    "task_report",
    "task_review",
    "task_trace",
]
