"""Phase 1: agents run each task blind; every run becomes one trace in one format.

`base` defines what a runner is given and returns; each runner (native
pydantic-ai agent, opencode, Claude Code, the scripted demo model) is one
module. Tool-call evidence never depends on a runner: the agent reaches the
server through the capture proxy, whose journal is the authority on what was
called and answered, and the trace is assembled from both.
"""
