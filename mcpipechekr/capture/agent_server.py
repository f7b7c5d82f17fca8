"""How an agent reaches the server under test behind the capture proxy.

The capture package hands these out (`hub.proxy_server`, `CaptureHub.agent_server`)
and the runners turn them into their agents' MCP settings, so the type lives
here, below the runners, and `runners.base` re-exports it with the rest of
what a runner is given.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True)
class AgentServer:
    """How the agent reaches the server under test: the capture proxy's stdio command or HTTP URL.

    `name` is the MCP server name the agent's config uses (opencode prefixes tool
    names with it: `<name>_<tool>`).
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command else "http"
