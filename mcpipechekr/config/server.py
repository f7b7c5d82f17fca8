"""The `server` section: how to launch or reach the MCP server under test, and when it is healthy.

Its own module because it is also built without config.yaml, from the
server-selection flags (`server.target`), and because its values feed the
config's secrets (`ServerConfig.secret_values`).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator, model_validator

from mcpipechekr._util.fields import MAX_SECONDS, Count, Number, StrictModel
from mcpipechekr._util.redact import command_line_secrets, url_secrets
from mcpipechekr.config.values import absolute_path, resolve_command, stringify_numbers


class LaunchSpec(StrictModel):
    """A process to start: the stdio server itself, or the command that brings an HTTP server up."""

    command: str = Field(
        min_length=1,
        description="Executable to run. `python`/`python3` mean the interpreter running MCPipeChekr.",
    )
    args: list[str] = Field(default_factory=list, description="Arguments passed to the command.")
    env: dict[str, str] = Field(
        default_factory=dict, description="Extra environment variables for the process."
    )
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

    _numbers_as_strings = field_validator("args", "env", mode="before")(stringify_numbers)

    def resolved_command(self) -> str:
        """The executable to spawn (see `python` rule above)."""
        return resolve_command(self.command)

    def resolve_paths(self, base_dir: Path) -> LaunchSpec:
        """A copy whose relative `cwd` is made absolute against `base_dir`."""
        return self.model_copy(update={"cwd": absolute_path(self.cwd, base_dir)})


class HealthConfig(StrictModel):
    """What "healthy" means: tools/list answers with at least `min_tools` tools within `timeout_s`."""

    timeout_s: Number = Field(
        default=60.0,
        gt=0,
        le=MAX_SECONDS,
        description="Seconds allowed for start-up plus tools/list: the least a start is allowed; one "
        "measured slower gets three times its measured start.",
    )
    min_tools: Count = Field(default=1, ge=0, le=100_000, description="Fewest tools a healthy server lists.")


class ServerConfig(StrictModel):
    """The MCP server under test: either a stdio launch or a streamable-HTTP URL."""

    name: str = Field(default="server", description="Short name used in reports and logs.")
    command: str | None = Field(default=None, description="stdio: executable to launch.")
    args: list[str] = Field(default_factory=list, description="stdio: arguments.")
    env: dict[str, str] = Field(default_factory=dict, description="stdio: extra environment variables.")
    cwd: str | None = Field(default=None, description="stdio: working directory, relative to config.yaml.")
    url: str | None = Field(
        default=None, description="Streamable HTTP endpoint, e.g. http://127.0.0.1:8765/mcp."
    )
    headers: dict[str, str] = Field(
        default_factory=dict, description="HTTP: headers sent with every request."
    )
    start: LaunchSpec | None = Field(default=None, description="HTTP: command that starts the server first.")
    repo: str | None = Field(
        default=None, description="Git repository of the server's source; fixes are committed here."
    )
    repo_template: str | None = Field(
        default=None,
        description="Folder copied into `repo` (as a fresh git repository) when `repo` does not exist yet.",
    )
    health: HealthConfig = Field(default_factory=HealthConfig)

    _numbers_as_strings = field_validator("args", "env", "headers", mode="before")(stringify_numbers)

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
            raise ValueError(
                "`start` only applies to a `url` server; a stdio server is started from `command`"
            )
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command else "http"

    def resolved_command(self) -> str | None:
        """The executable to spawn for stdio (`python`/`python3` -> this interpreter); None for HTTP."""
        return None if self.command is None else resolve_command(self.command)

    def secret_values(self) -> list[str]:
        """Header and environment values (the start command's too): secrets whatever their source; and
        what the command lines and the URL carry as secrets (`--password X`, `user:X@host`, `?key=X`),
        written literally where no `${VAR}` hides them."""
        values = [*self.headers.values(), *self.env.values()]
        if self.command is not None:
            values.extend(command_line_secrets([self.command, *self.args]))
        if self.url is not None:
            values.extend(url_secrets(self.url))
        if self.start is not None:
            values.extend(self.start.env.values())
            values.extend(command_line_secrets([self.start.command, *self.start.args]))
        return values

    def resolve_paths(self, base_dir: Path) -> ServerConfig:
        """A copy with `cwd`, `repo`, `repo_template` and `start.cwd` made absolute against `base_dir`."""
        return self.model_copy(
            update={
                "cwd": absolute_path(self.cwd, base_dir),
                "repo": absolute_path(self.repo, base_dir),
                "repo_template": absolute_path(self.repo_template, base_dir),
                "start": self.start.resolve_paths(base_dir) if self.start else None,
            }
        )
