"""MCPipeChekr: measure how LLM agents use an MCP server, then fix what costs them.

The package is laid out as the pipeline: ``config``/``tasks`` for the files a user
edits, ``artifacts`` for every file the pipeline writes, ``server`` for the server
under test, one package per phase, and ``cli``/``graph`` as thin front ends.
"""

from typing import Any

__all__ = ["__version__"]


def __getattr__(name: str) -> Any:
    """`__version__`, looked up on first use: importlib.metadata costs ~45 ms at import, and the capture
    proxy, started once per attempt, imports this package without needing it."""
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("mcpipechekr")
    except PackageNotFoundError:  # running from a source tree that was never installed
        found = "0.0.0+unknown"
    globals()["__version__"] = found
    return found
