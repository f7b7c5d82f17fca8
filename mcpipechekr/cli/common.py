"""Option sets shared by commands, and the one way they become an effective Config.

A command stacks the decorators it needs and, inside, calls
`effective_config(ctx)`: flags beat config.yaml, and every command reads them
the same way. Nothing here parses a flag's meaning; that is the library's job
(`mcpipechekr.server.target`, `mcpipechekr.config`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from mcpipechekr._util.project_lock import project_lock
from mcpipechekr.artifacts.rundir import RunDir, open_run
from mcpipechekr.config import (
    DEFAULT_CONFIG_FILE,
    PROVIDER_FLAGS,
    Config,
    ConfigOverrides,
    load_config,
    provider_flag,
)
from mcpipechekr.server.target import ServerFlags
from mcpipechekr.steps.stage import ALLOW_INCOMPLETE_HELP
from mcpipechekr.tasks import DEFAULT_TASKS_FILE

F = TypeVar("F", bound=Callable[..., Any])
_PATH = click.Path(path_type=Path, dir_okay=False)


def _stack(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    def apply(function: F) -> F:
        for decorator in reversed(decorators):
            function = decorator(function)
        return function

    return apply


config_option = click.option(
    "--config",
    "config_path",
    type=_PATH,
    default=DEFAULT_CONFIG_FILE,
    show_default=True,
    help="The config file. Relative paths inside it are taken from its folder.",
)

config_options = _stack(
    config_option,
    click.option(
        "--tasks",
        "tasks_path",
        type=_PATH,
        default=None,
        help="The task file [default: config's paths.tasks, i.e. tasks.yaml beside config.yaml].",
    ),
)

server_options = _stack(
    click.option(
        "--command",
        "server_command",
        metavar="'CMD ARGS…'",
        help="Talk to a stdio server started by this command line (overrides config.yaml's server).",
    ),
    click.option("--url", "server_url", metavar="URL", help="Talk to a streamable-HTTP server at this URL."),
    click.option(
        "--header",
        "server_headers",
        metavar="NAME:VALUE",
        multiple=True,
        help="HTTP header sent to the --url server; repeatable.",
    ),
    click.option(
        "--from-mcp-json",
        "mcp_json",
        type=_PATH,
        help='Take the server from an MCP client\'s mcp.json ({"mcpServers": {…}}).',
    ),
    click.option("--server", "server_name", metavar="NAME", help="Which server of --from-mcp-json to use."),
    click.option(
        "--env",
        "server_env",
        metavar="NAME=VALUE",
        multiple=True,
        help="Environment variable for the --command (or --from-mcp-json) server; repeatable. "
        "A ${VAR} value is taken from the environment (init writes it as the reference).",
    ),
    click.option(
        "--cwd",
        "server_cwd",
        metavar="DIR",
        help="Folder the --command (or --from-mcp-json) server runs in [default: the current folder].",
    ),
)


def provider_option(phase: str, *, repeatable: bool = False) -> Callable[[F], F]:
    """The `--phaseN-provider` option of one phase, from `config.PROVIDER_FLAGS`.

    `repeatable` is for a command that compares models: its first value is the
    config's `providers.<phase>` (see `config_overrides`), the command reads the rest.
    """
    flag = provider_flag(phase)
    more = " Repeat it to compare models in one run." if repeatable else ""
    return click.option(
        flag.flag, flag.dest, metavar="PROVIDER/MODEL", multiple=repeatable, help=flag.help + more
    )


provider_options = _stack(*(provider_option(flag.phase) for flag in PROVIDER_FLAGS))

allow_incomplete_option = click.option("--allow-incomplete", is_flag=True, help=ALLOW_INCOMPLETE_HELP)

task_selection_options = _stack(
    click.option("--task", "task_ids", metavar="ID", multiple=True, help="Run only this task; repeatable."),
    click.option(
        "--tag", "tags", metavar="TAG", multiple=True, help="Run only tasks with this tag; repeatable."
    ),
)


def server_flags(params: dict[str, Any]) -> ServerFlags:
    """The server-selection flags from a command's parsed parameters."""
    return ServerFlags(
        command=params.get("server_command"),
        url=params.get("server_url"),
        headers=tuple(params.get("server_headers") or ()),
        mcp_json=params.get("mcp_json"),
        server_name=params.get("server_name"),
        env=tuple(params.get("server_env") or ()),
        cwd=params.get("server_cwd"),
    )


def config_overrides(params: dict[str, Any]) -> ConfigOverrides:
    """Every flag that overrides config.yaml, from a command's parsed parameters."""
    providers: dict[str, str] = {}
    for flag in PROVIDER_FLAGS:
        value = params.get(flag.dest)
        if isinstance(value, tuple):  # a repeatable provider option: its first value is the config's
            value = value[0] if value else None
        if value:
            providers[flag.phase] = value
    return ConfigOverrides(server=server_flags(params), providers=providers, tasks=params.get("tasks_path"))


def effective_config(ctx: click.Context) -> Config:
    """config.yaml with the command's flags applied.

    A config file that is absent is fine when --config was left at its default
    and the server flags describe a server: defaults fill the rest.
    """
    params = ctx.params
    path = Path(params.get("config_path") or DEFAULT_CONFIG_FILE)
    defaulted = ctx.get_parameter_source("config_path") in (None, ParameterSource.DEFAULT)
    overrides = config_overrides(params)
    missing_ok = defaulted and overrides.server is not None and overrides.server.given
    return load_config(path, overrides, missing_ok=missing_ok)


def resolve_run(ctx: click.Context, run: str, config: Config | None = None) -> RunDir:
    """The run a RUN argument names: a run folder, a run id or `latest`.

    A folder path needs no config; an id or `latest` is looked up in the runs
    of ``config``, or of the command's effective config when none is given.
    """
    folder = Path(run)
    if folder.is_dir():
        return RunDir(folder.resolve())
    if config is None:
        config = effective_config(ctx)
    return open_run(config.paths.runs, run)


def tasks_file(params: dict[str, Any], config: Config | None) -> Path:
    """The task file to read: --tasks, else config's paths.tasks, else tasks.yaml beside the config file."""
    if params.get("tasks_path"):
        return Path(params["tasks_path"])
    if config is not None:
        return config.paths.tasks
    return Path(params.get("config_path") or DEFAULT_CONFIG_FILE).parent / DEFAULT_TASKS_FILE


def project_folder(ctx: click.Context) -> Path:
    """The project a command works on: the folder of its config file (--config, else config.yaml here).

    Commands without --config work on the working folder's project, whose
    config.yaml the default would be.
    """
    return Path(ctx.params.get("config_path") or DEFAULT_CONFIG_FILE).parent


@contextmanager
def holding_project(ctx: click.Context) -> Iterator[None]:
    """The project's lock (`_util/project_lock.py`) around a command's writes, for a command that writes
    only sometimes (`review` with a decision)."""
    with project_lock(project_folder(ctx)):
        yield


def writes_project(function: F) -> F:
    """Run the command under the project's lock: it writes runs/, the findings home or the server's repo.

    Put it right above the command function, below its click decorators.
    """

    @functools.wraps(function)
    def locked(*args: Any, **kwargs: Any) -> Any:
        with holding_project(click.get_current_context()):
            return function(*args, **kwargs)

    return locked  # type: ignore[return-value]
