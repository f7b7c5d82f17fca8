"""Which server a command talks to: config.yaml's `server`, overridden by the server-selection flags.

Every command that reaches the server accepts the same flags (added by
`mcpipechekr.cli.common.server_options`) and resolves them here, so they mean
the same thing everywhere:

- `--command "…"`: a stdio server, split like a shell would;
- `--url …` with repeatable `--header NAME:VALUE`: a streamable-HTTP server;
- `--from-mcp-json PATH --server NAME`: an entry of the `mcpServers` (or
  `servers`) map that MCP clients keep in mcp.json;
- repeatable `--env NAME=VALUE` and `--cwd DIR`: the environment and folder of
  a stdio server, from --command or an mcp.json entry (whose own `env` and
  `cwd` they override key by key).

A flag names another server: it replaces config.yaml's whole server section
except `health` (how patient to be is a setting, not a property of the server).
The name comes from the flag (the mcp.json entry, the program the command
really runs once `env`, shells and package runners are looked through
(`server/program.py`), the URL's host and port), and `repo`/`repo_template`
are dropped: a one-off server must never have fixes committed into the
configured server's repository.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from mcpipechekr._util.yamlsrc import (
    ConfigFileError,
    Problem,
    display_path,
    field_path,
    interpolate,
    plain_message,
    read_text_file,
)
from mcpipechekr.config import ServerConfig
from mcpipechekr.errors import UserError
from mcpipechekr.server.program import program_name, program_of

# The only part of config.yaml's server section a flag keeps.
_KEPT_FIELDS = {"health"}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HTTP_TYPES = ("http", "streamable-http", "streamableHttp", "streamable_http")


@dataclass(frozen=True)
class ServerFlags:
    """The server-selection flags as given on a command line (all empty: use config.yaml)."""

    command: str | None = None
    url: str | None = None
    headers: tuple[str, ...] = ()
    mcp_json: Path | None = None
    server_name: str | None = None
    env: tuple[str, ...] = ()
    """`--env NAME=VALUE` as typed."""
    cwd: str | None = None

    @property
    def given(self) -> bool:
        flags = (self.command, self.url, self.headers, self.mcp_json, self.server_name, self.env, self.cwd)
        return any(flags)

    def flag_names(self) -> str:
        """The flags given, as a problem's source names them: `--url/--header`."""
        given = [
            flag
            for flag, value in (
                ("--command", self.command),
                ("--url", self.url),
                ("--header", self.headers),
                ("--from-mcp-json", self.mcp_json),
                ("--server", self.server_name),
                ("--env", self.env),
                ("--cwd", self.cwd),
            )
            if value
        ]
        return "/".join(given)

    def resolve(
        self, config_server: ServerConfig | None, *, base_dir: Path, substitute_env: bool = True
    ) -> ServerConfig:
        return resolve_server(
            config_server,
            command=self.command,
            url=self.url,
            headers=self.headers,
            mcp_json=self.mcp_json,
            server_name=self.server_name,
            env=self.env,
            cwd=self.cwd,
            base_dir=base_dir,
            substitute_env=substitute_env,
        )


def resolve_server(
    config_server: ServerConfig | None,
    *,
    command: str | None = None,
    url: str | None = None,
    headers: tuple[str, ...] | list[str] = (),
    mcp_json: str | Path | None = None,
    server_name: str | None = None,
    env: tuple[str, ...] | list[str] = (),
    cwd: str | Path | None = None,
    base_dir: Path,
    substitute_env: bool = True,
) -> ServerConfig:
    """The effective server: the flags' if any were given, else config.yaml's; paths made absolute.

    Raises UserError for contradictory flags or no server at all, and
    ConfigFileError (naming the file) for a bad mcp.json. `substitute_env=False`
    keeps `${NAME}` references (an mcp.json's, an --env value's) as written, for
    writing them into a config file rather than using them. `env` and `cwd` are
    the `--env`/`--cwd` flags, for a stdio server only; a relative `cwd` is taken
    from the folder the command is run in, as a path typed on a command line is.
    """
    chosen = [
        flag
        for flag, value in (("--command", command), ("--url", url), ("--from-mcp-json", mcp_json))
        if value
    ]
    if len(chosen) > 1:
        raise UserError(
            f"{chosen[0]} and {chosen[1]} are mutually exclusive: give one way to reach the server"
        )
    if headers and not url:
        raise UserError("--header applies to --url only (an mcp.json entry carries its own headers)")
    if server_name and not mcp_json:
        raise UserError("--server names an entry of --from-mcp-json: give --from-mcp-json PATH too")
    given = [flag for flag, value in (("--env", env), ("--cwd", cwd)) if value]
    stdio_flags = " and ".join(given) + (" apply" if len(given) > 1 else " applies")
    if given and url:
        raise UserError(
            f"{stdio_flags} to a stdio server (--command), not to --url: a server reached by URL "
            "is started elsewhere, so set its environment and folder where it is started"
        )
    if given and not (command or mcp_json):
        raise UserError(
            f"{stdio_flags} to the server of --command or --from-mcp-json: give one, or set "
            "server.env / server.cwd in config.yaml"
        )
    flag_env = _env_fields(env, substitute_env)
    flag_cwd = _cwd_field(cwd)

    if command:
        fields = _command_fields(command)
        fields["name"] = _name_from_command(fields["command"], fields["args"], flag_cwd)
    elif url:
        fields = {
            "url": url,
            "headers": dict(parse_header(text) for text in headers),
            "name": _name_from_url(url),
        }
    elif mcp_json:
        server_name, fields = read_mcp_json(Path(mcp_json), server_name, substitute_env=substitute_env)
        fields["name"] = server_name
        if given and "url" in fields:
            raise UserError(
                f"{stdio_flags} to a stdio server, and '{server_name}' in {display_path(Path(mcp_json))} "
                "is reached by URL: leave it out, or choose an entry with `command`"
            )
    elif config_server is not None:
        return config_server.resolve_paths(base_dir)
    else:
        raise UserError(
            "no server to talk to: add a `server:` section to config.yaml, "
            "or pass --command, --url or --from-mcp-json"
        )

    if flag_env:
        fields["env"] = {**fields.get("env", {}), **flag_env}  # the flags win, key by key
    if flag_cwd is not None:
        fields["cwd"] = flag_cwd
    kept = config_server.model_dump(include=_KEPT_FIELDS) if config_server is not None else {}
    try:
        server = ServerConfig.model_validate({**kept, **fields})
    except ValidationError as exc:
        raise UserError(
            "; ".join(
                f"{_flag_name(detail['loc'])}: {plain_message(detail, ServerConfig, tuple(detail['loc']))}"
                for detail in exc.errors(include_url=False)
            )
        ) from None
    return server.resolve_paths(base_dir)


def _flag_name(loc: tuple[Any, ...]) -> str:
    names = {"command": "--command", "url": "--url", "headers": "--header"}
    return names.get(str(loc[0]), f"server field '{field_path(loc)}'") if loc else "server"


def _command_fields(command: str) -> dict[str, Any]:
    try:
        parts = shlex.split(command)
    except ValueError as exc:
        raise UserError(f"--command cannot be split into words ({exc}): check its quotes") from None
    if not parts:
        raise UserError(
            '--command is empty: give the command line that starts the server, e.g. "python server.py"'
        )
    return {"command": parts[0], "args": parts[1:]}


def _name_from_command(command: str, args: list[str], cwd: str | None = None) -> str:
    """The name of the program the command really runs (`server/program.py`).

    `python tools/my_server.py` -> `my_server`; `env HOME=/h my-server` -> `my-server`;
    `npx -y @scope/server-files` -> `server-files`; `node ../weather/dist/index.js` -> `weather`.
    """
    return program_name(program_of([command, *args]), cwd) or Path(command).name or "server"


def parse_env_flag(text: str) -> tuple[str, str]:
    """`--env NAME=VALUE` -> (NAME, VALUE); the value may be empty or hold `=`."""
    name, sep, value = text.partition("=")
    if not sep or not _ENV_NAME.match(name):
        raise UserError(
            "--env must be NAME=VALUE with NAME made of letters, digits and '_' "
            f"(e.g. --env HOME=/tmp/notes-home); got {text!r}"
        )
    return name, value


def _env_fields(texts: tuple[str, ...] | list[str], substitute_env: bool) -> dict[str, str]:
    """The --env flags as a mapping, `${NAME}` references substituted from the environment (or kept)."""
    env = dict(parse_env_flag(text) for text in texts)
    if not substitute_env or not env:
        return env
    substituted = interpolate(env, os.environ)
    if substituted.problems:
        raise UserError(
            "; ".join(f"--env {field_path(loc)}: {message}" for loc, message in substituted.problems)
        )
    return dict(substituted.data)


def _cwd_field(cwd: str | Path | None) -> str | None:
    """--cwd as an absolute folder (a relative one is taken from the current folder); it must exist."""
    if cwd is None or str(cwd) == "":
        return None
    folder = os.path.abspath(Path(cwd).expanduser())
    if not os.path.isdir(folder):
        raise UserError(f"--cwd {cwd}: no such folder; give the folder the server runs in")
    return folder


def _name_from_url(url: str) -> str:
    """`http://127.0.0.1:8765/mcp` -> `127.0.0.1:8765`."""
    return urlsplit(url).netloc.rpartition("@")[2] or "server"


def parse_header(text: str) -> tuple[str, str]:
    """`NAME:VALUE` (spaces around either part ignored) -> (NAME, VALUE)."""
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise UserError(f"--header must be NAME:VALUE, e.g. 'Authorization: Bearer …'; got {text!r}")
    return name.strip(), value.strip()


def read_mcp_json(
    path: Path, server_name: str | None, *, substitute_env: bool = True
) -> tuple[str, dict[str, Any]]:
    """One entry of an MCP client's server map, as ServerConfig fields: (name, fields).

    `${NAME}` references in the entry are substituted from the process
    environment, as clients that support them do. Client-specific keys
    (`disabled`, `autoApprove`, `timeout`, …) are ignored.
    """
    shown = display_path(path)

    def fail(message: str, line: int | None = None, column: int | None = None) -> ConfigFileError:
        return ConfigFileError([Problem(shown, line, message, column)])

    if not path.exists():
        raise fail("mcp.json file not found (given by --from-mcp-json)")
    text = read_text_file(path, what="mcp.json file")  # not UTF-8: the line of the bad byte
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise fail(f"invalid JSON: {exc.msg}", exc.lineno, exc.colno) from None
    except RecursionError:
        raise fail("lists and objects nested too deeply to read") from None

    servers = data.get("mcpServers", data.get("servers")) if isinstance(data, dict) else None
    if not isinstance(servers, dict) or not servers:
        raise fail('no servers: expected {"mcpServers": {"name": {"command": …} | {"url": …}}}')
    if server_name is None:
        if len(servers) > 1:
            raise fail(
                f"defines several servers: choose one with --server NAME (servers: {', '.join(servers)})"
            )
        server_name = next(iter(servers))
    if server_name not in servers:
        raise fail(f"no server '{server_name}' (servers: {', '.join(servers)})")
    entry = servers[server_name]
    if not isinstance(entry, dict):
        raise fail(f"server '{server_name}' must be an object with `command` or `url`")

    substituted = interpolate(entry, os.environ if substitute_env else {})
    if substitute_env and substituted.problems:
        raise ConfigFileError(
            [
                Problem(shown, None, f"server '{server_name}' field '{field_path(loc)}': {msg}")
                for loc, msg in substituted.problems
            ]
        )
    entry = substituted.data if substitute_env else entry
    kind = entry.get("type")
    url = entry.get("url") or entry.get("serverUrl")
    if kind == "sse":
        raise fail(
            f"server '{server_name}' uses the SSE transport; MCPipeChekr speaks stdio and streamable HTTP"
        )
    if url and entry.get("command"):
        raise fail(f"server '{server_name}' has both `command` and `url`: keep one")
    if url:
        if kind not in (None, *_HTTP_TYPES):
            raise fail(f"server '{server_name}' has type {kind!r}; a `url` server must be streamable HTTP")
        return server_name, {"url": url, "headers": _mapping(entry, "headers", server_name, fail)}
    if entry.get("command"):
        args = entry.get("args", [])
        if not isinstance(args, list):
            raise fail(f"server '{server_name}' field 'args' must be a list of strings")
        fields: dict[str, Any] = {
            "command": entry["command"],
            "args": args,
            "env": _mapping(entry, "env", server_name, fail),
        }
        if entry.get("cwd"):
            cwd = Path(str(entry["cwd"])).expanduser()
            fields["cwd"] = str(cwd if cwd.is_absolute() else (path.resolve().parent / cwd).resolve())
        return server_name, fields
    raise fail(f"server '{server_name}' has neither `command` (stdio) nor `url` (streamable HTTP)")


def _mapping(entry: dict[str, Any], key: str, server_name: str, fail: Any) -> dict[str, Any]:
    value = entry.get(key) or {}
    if not isinstance(value, dict):
        raise fail(f"server '{server_name}' field '{key}' must be an object of names to strings")
    return value
