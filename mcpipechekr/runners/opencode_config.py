"""The opencode config of a run: the server under test as an MCP entry, the model's provider,
the step limit and the permissions that keep the agent to the server's tools.

Both modes use it: `run` writes it to a file per attempt, `serve` starts
`opencode serve` with it and adds each attempt's MCP entry over `POST /mcp`
(`served_mcp_entry`). Secrets are `{env:NAME}` references in the file, never
values.
"""

from __future__ import annotations

import re
from typing import Any

from mcpipechekr.runners.base import AgentServer, RunRequest
from mcpipechekr.runners.cliagent import SecretEnv, SessionFormatError

_UNSAFE_NAME = re.compile(r"[^a-zA-Z0-9_-]")


def opencode_server_key(server_name: str) -> str:
    """The name opencode gives an MCP server in tool names (`my.server` -> `my_server`)."""
    return _UNSAFE_NAME.sub("_", server_name)


def opencode_model(request: RunRequest) -> str:
    """The `-m provider/model` argument for the request's provider."""
    spec = request.provider
    if spec.model is None:
        raise SessionFormatError(
            f"provider '{spec}' names no model; the opencode runner needs provider/model"
        )
    return f"{spec.provider}/{spec.model}"


def build_opencode_config(
    request: RunRequest, secrets: SecretEnv, *, keep_builtin_tools: bool = False
) -> dict[str, Any]:
    """The per-run opencode config for one attempt (secrets referenced as `{env:NAME}`)."""
    key = opencode_server_key(request.server.name)
    tool_timeout_ms = int(request.config.timeouts.tool_call_s * 1000)
    config: dict[str, Any] = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "snapshot": False,  # no git snapshots of the (empty) project folder
        "mcp": {key: _mcp_entry(request.server, secrets, tool_timeout_ms)},
        "permission": {"*": "allow"} if keep_builtin_tools else {"*": "deny", f"{key}_*": "allow"},
        "agent": {"build": {"steps": request.max_requests}},
    }
    endpoint = request.config.providers.endpoint_for(request.provider)
    if endpoint is not None and request.provider.model is not None:
        options: dict[str, Any] = {"baseURL": endpoint.base_url}
        if endpoint.api_key_env:
            options["apiKey"] = "{env:" + endpoint.api_key_env + "}"
        config["provider"] = {
            request.provider.provider: {
                "npm": "@ai-sdk/openai-compatible",
                "name": request.provider.provider,
                "options": options,
                "models": {request.provider.model: {"name": request.provider.model}},
            }
        }
    return config


def _local_entry(server: AgentServer, timeout_ms: int) -> dict[str, Any]:
    """A stdio server's MCP entry, the same in the config file and over `POST /mcp`."""
    entry: dict[str, Any] = {
        "type": "local",
        "command": [server.command, *server.args],
        "enabled": True,
        "timeout": timeout_ms,
    }
    if server.cwd:
        entry["cwd"] = server.cwd
    return entry


def _mcp_entry(server: AgentServer, secrets: SecretEnv, timeout_ms: int) -> dict[str, Any]:
    if server.transport == "stdio":
        return _local_entry(server, timeout_ms)
    return {
        "type": "remote",
        "url": server.url,
        "enabled": True,
        "timeout": timeout_ms,
        "headers": {name: "{env:" + secrets.name_for(value) + "}" for name, value in server.headers.items()},
    }


def served_mcp_entry(server: AgentServer, timeout_ms: int) -> dict[str, Any]:
    """The server's MCP entry for `POST /mcp`: as in the config file, but with values, not `{env:NAME}`
    references (an entry added at run time is not read as a file; it goes over loopback, is never written)."""
    if server.transport == "stdio":
        entry = _local_entry(server, timeout_ms)
        if server.env:
            entry["environment"] = dict(server.env)
        return entry
    entry = {"type": "remote", "url": server.url, "enabled": True, "timeout": timeout_ms}
    if server.headers:
        entry["headers"] = dict(server.headers)
    return entry
