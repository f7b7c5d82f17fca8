"""`mcpipechekr tasks propose`: tasks.yaml entries from read-only exploration of the server, verified."""

from mcpipechekr.propose.run import ProposeOutcome, assign_splits, propose_tasks
from mcpipechekr.propose.verify import Refusal
from mcpipechekr.propose.write import (
    appended,
    existing_tasks,
    new_task_file,
    proposal_target,
    render_tasks,
    replaces_example,
    write_proposed,
    write_task_file,
)

__all__ = [
    "ProposeOutcome",
    "Refusal",
    "appended",
    "assign_splits",
    "existing_tasks",
    "new_task_file",
    "proposal_target",
    "propose_tasks",
    "render_tasks",
    "replaces_example",
    "write_proposed",
    "write_task_file",
]
