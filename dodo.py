"""The MCPipeChekr pipeline as a doit build graph: `doit list` shows the targets, `doit loop` runs it.

The task definitions live in mcpipechekr/graph.py; this file only exposes them to doit.
"""

from mcpipechekr.graph import (
    DOIT_CONFIG,
    task_baseline,
    task_check,
    task_evaluate,
    task_health,
    task_lint,
    task_loop,
    task_trace,
    task_workspace,
)

__all__ = [
    "DOIT_CONFIG",
    "task_baseline",
    "task_check",
    "task_evaluate",
    "task_health",
    "task_lint",
    "task_loop",
    "task_trace",
    "task_workspace",
]
