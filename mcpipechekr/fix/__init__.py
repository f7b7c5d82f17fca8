"""Phase 3: the fix loop. An approved bug becomes one agent-made, harness-committed `fix: <bug id>`.

`loop` drives it (one bug at a time, restart and health check after each
commit), `prompt` builds what the agent reads, `agents` turns the configured
template into a process, and `changes` decides exactly which files a fix
commit holds. docs/fix.md describes the phase for users.
"""

from mcpipechekr.fix.agents import TEMPLATES, AgentResult, AgentTemplate, FixAgent, resolve_agent
from mcpipechekr.fix.loop import run_fix_loop
from mcpipechekr.fix.prompt import PROMISE, build_fix_prompt, has_promise

__all__ = [
    "PROMISE",
    "TEMPLATES",
    "AgentResult",
    "AgentTemplate",
    "FixAgent",
    "build_fix_prompt",
    "has_promise",
    "resolve_agent",
    "run_fix_loop",
]
