"""Capture at the MCP layer: a proxy between any agent and the server under test.

Every JSON-RPC message between them is forwarded unchanged and journaled
(`artifacts/journal.py`), so a trace's tool calls never depend on what an
agent chooses to export.

- `proxy_server(server_config, journal, name)`: the stdio command an agent
  launches instead of the server (`python -m mcpipechekr.capture`);
- `CaptureHub`: the same for a whole run and either transport (an HTTP
  server gets one local proxy with a route per attempt);
- `journal_tool_calls(journal)`: the tool calls a journal proves, as trace steps;
- `server_failure(journal)`: why the server died during an attempt, if it did.

Names are imported on first use: the stdio proxy process imports this package
and must not pay for the HTTP proxy's imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcpipechekr.capture.calls import journal_tool_calls, server_failure
    from mcpipechekr.capture.http_proxy import HttpCaptureProxy
    from mcpipechekr.capture.hub import CaptureHub, proxy_server
    from mcpipechekr.capture.journal import JournalWriter

_EXPORTS = {
    "journal_tool_calls": "mcpipechekr.capture.calls",
    "server_failure": "mcpipechekr.capture.calls",
    "HttpCaptureProxy": "mcpipechekr.capture.http_proxy",
    "CaptureHub": "mcpipechekr.capture.hub",
    "proxy_server": "mcpipechekr.capture.hub",
    "JournalWriter": "mcpipechekr.capture.journal",
}

__all__ = [
    "CaptureHub",
    "HttpCaptureProxy",
    "JournalWriter",
    "journal_tool_calls",
    "proxy_server",
    "server_failure",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mcpipechekr.capture' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
