"""`mcpipechekr check`: protocol compliance, functional cases and response quality for any MCP server.

Deterministic and LLM-free, so it runs in CI and doubles as the loop's proof
that a server is healthy after a fix. Layers: `protocol` (works on any server
with no configuration), `functional` (a cases file), `quality` (response sizes
against budgets).
"""
