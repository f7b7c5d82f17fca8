"""config.yaml: how to reach the server under test, which models run each phase, and the knobs.

Only the models live here for now; loading (YAML with line numbers, `${ENV}`
interpolation, `.env`, CLI overrides) builds on them.
"""

from __future__ import annotations

import shlex
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class _Strict(BaseModel):
    """Unknown keys are errors: a typo in config.yaml must not be silently ignored."""

    model_config = ConfigDict(extra="forbid")


class LaunchSpec(_Strict):
    """A process to start: the stdio server itself, or the command that brings an HTTP server up."""

    command: str = Field(min_length=1, description="Executable to run. `python`/`python3` mean the interpreter running MCPipeChekr.")
    args: list[str] = Field(default_factory=list, description="Arguments passed to the command.")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment variables for the process.")
    cwd: str | None = Field(default=None, description="Working directory, relative to config.yaml's folder.")

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, value: Any) -> Any:
        """A plain string is a shell-style command line: `start: "python server.py --http 8765"`."""
        if isinstance(value, str):
            parts = shlex.split(value)
            if not parts:
                return {"command": ""}
            return {"command": parts[0], "args": parts[1:]}
        return value


class HealthConfig(_Strict):
    """What "healthy" means: tools/list answers with at least `min_tools` tools within `timeout_s`."""

    timeout_s: float = Field(default=30.0, gt=0, description="Seconds allowed for start-up plus tools/list.")
    min_tools: int = Field(default=1, ge=0, description="Fewest tools a healthy server lists.")


class ServerConfig(_Strict):
    """The MCP server under test: either a stdio launch or a streamable-HTTP URL."""

    name: str = Field(default="server", description="Short name used in reports and logs.")
    command: str | None = Field(default=None, description="stdio: executable to launch.")
    args: list[str] = Field(default_factory=list, description="stdio: arguments.")
    env: dict[str, str] = Field(default_factory=dict, description="stdio: extra environment variables.")
    cwd: str | None = Field(default=None, description="stdio: working directory, relative to config.yaml.")
    url: str | None = Field(default=None, description="Streamable HTTP endpoint, e.g. http://127.0.0.1:8765/mcp.")
    headers: dict[str, str] = Field(default_factory=dict, description="HTTP: headers sent with every request.")
    start: LaunchSpec | None = Field(default=None, description="HTTP: command that starts the server first.")
    repo: str | None = Field(default=None, description="Git repository of the server's source; fixes are committed here.")
    repo_template: str | None = Field(
        default=None,
        description="Folder copied into `repo` (as a fresh git repository) when `repo` does not exist yet.",
    )
    health: HealthConfig = Field(default_factory=HealthConfig)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value

    @model_validator(mode="after")
    def _one_transport(self) -> ServerConfig:
        if self.command and self.url:
            raise ValueError("give either `command` (stdio) or `url` (streamable HTTP), not both")
        if not self.command and not self.url:
            raise ValueError("give `command` (stdio) or `url` (streamable HTTP)")
        if self.start is not None and not self.url:
            raise ValueError("`start` only applies to a `url` server; a stdio server is started from `command`")
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command else "http"
