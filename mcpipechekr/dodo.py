"""The module doit loads for a project: the pipeline's tasks and DOIT_CONFIG, from the installed package.

A project's dodo.py (written by `mcpipechekr init`) is one import of this
module, so `doit list`, `doit baseline` and `doit loop` in that folder build the
package's graph against the folder's own config.yaml and tasks.yaml, and a
newer MCPipeChekr brings its graph along without touching the file. Importing
it readies the project folder (doit runs in it) and takes the project's lock.
"""

from mcpipechekr._util.private_mode import private_by_default
from mcpipechekr._util.tempfiles import sweep_dead_temp_folders
from mcpipechekr.graph import (
    DOIT_CONFIG,
    open_project,
    task__phase1,
    task__tools,
    task_baseline,
    task_check,
    task_evaluate,
    task_fix,
    task_lint,
    task_loop,
    task_report,
    task_review,
    task_trace,
)

private_by_default()  # files 0600, folders 0700: see _util/private_mode.py
sweep_dead_temp_folders()  # what a killed run of ours left in the temp folder
open_project()

__all__ = [
    "DOIT_CONFIG",
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
