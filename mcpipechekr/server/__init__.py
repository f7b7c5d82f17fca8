"""The MCP server under test: launch, connect over stdio or streamable HTTP, health, restart.

`lifecycle` owns the process and the connection; `target` resolves the
server-selection flags every command shares; `workspace` prepares the git
repository where fixes are committed.
"""
