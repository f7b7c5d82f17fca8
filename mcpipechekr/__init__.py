"""MCPipeChekr: measure how LLM agents use an MCP server, then fix what costs them.

The package is laid out as the pipeline: ``config``/``tasks`` for the files a user
edits, ``artifacts`` for every file the pipeline writes, ``server`` for the server
under test, one package per phase, and ``cli``/``graph`` as thin front ends.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("mcpipechekr")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
