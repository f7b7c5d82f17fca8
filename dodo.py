"""The MCPipeChekr pipeline as a doit build graph: `doit list` shows the targets, `doit loop` runs it.

The task definitions live in mcpipechekr/graph.py; this file only exposes them to doit.
"""

from mcpipechekr.graph import (
    DOIT_CONFIG,
    hold_project_lock,
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

hold_project_lock()

__all__ = [
    "DOIT_CONFIG",
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
