"""Reading config.yaml into the effective `Config`: `${NAME}` substitution, `.env`, command-line
overrides, validation, and problems that name the file's line or the flag.

The order of these steps is described in the package's docstring.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from mcpipechekr._util.safe_read import resolved, resolved_file
from mcpipechekr._util.yamlsrc import (
    ConfigFileError,
    Loc,
    Problem,
    YamlDocument,
    environment_with_dotenv,
    field_path,
    interpolate,
    load_yaml,
    problems_from_validation,
    read_dotenv,
    unique_problems,
)
from mcpipechekr.config.effective import Config
from mcpipechekr.config.flags import provider_flag
from mcpipechekr.config.server import ServerConfig

DEFAULT_CONFIG_FILE = "config.yaml"


class ServerOverride(Protocol):
    """Server-selection flags as `load_config` applies them over config.yaml's `server` section.

    `server.target.ServerFlags` is the implementation. Resolving flags builds a
    `ServerConfig`, so the flags live a layer above this module; loading needs
    only these members, and this protocol keeps the config package free of that import.
    """

    @property
    def given(self) -> bool:
        """Whether any server-selection flag was given."""
        ...

    def flag_names(self) -> str:
        """The flags given, as a problem's source names them: `--url/--header`."""
        ...

    def resolve(
        self, config_server: ServerConfig | None, *, base_dir: Path, substitute_env: bool = True
    ) -> ServerConfig:
        """The effective server: the flags' if any were given, else `config_server`; paths made absolute."""
        ...


@dataclass(frozen=True)
class ConfigOverrides:
    """Command-line values that beat config.yaml. Empty fields leave the file's value alone."""

    server: ServerOverride | None = None
    providers: Mapping[str, str] = field(default_factory=dict)  # phase -> provider string
    tasks: Path | None = None


def load_config(
    path: str | Path = DEFAULT_CONFIG_FILE,
    overrides: ConfigOverrides | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    missing_ok: bool = False,
) -> Config:
    """Read config.yaml and return the effective Config; raise ConfigFileError listing every problem.

    `environ` replaces the process environment (tests), for `${NAME}` and for
    `Config.environ`; `.env` beside the file is read either way, once. With
    `missing_ok`, an absent file means "all defaults" (so `--command …` alone
    can describe a server), with paths relative to the file's would-be folder.
    """
    path = Path(path)
    overrides = overrides or ConfigOverrides()
    base_dir = resolved(path).parent
    if missing_ok and not os.path.lexists(path):
        doc = YamlDocument(path=path, data={}, lines={})
    else:
        doc = load_yaml(path, what="config file")

    dotenv = read_dotenv(base_dir / ".env")
    env = environment_with_dotenv(dotenv, environ)
    substituted = interpolate(doc.data, env)
    problems = [
        doc.problem(loc, f"field '{field_path(loc)}': {message}") for loc, message in substituted.problems
    ]
    data: dict[str, Any] = substituted.data

    sources: dict[Loc, str] = {}
    for phase, value in overrides.providers.items():
        flag = provider_flag(phase)
        if value is not None:
            providers = data.get("providers")
            data["providers"] = providers = dict(providers) if isinstance(providers, dict) else {}
            providers[phase] = value
            sources[("providers", phase)] = flag.flag

    flagged = dict(sources)
    if overrides.server is not None and overrides.server.given:
        server, server_problems = _server_with_flags(doc, data.get("server"), overrides.server, base_dir)
        problems.extend(server_problems)
        data["server"] = server
        flagged[("server",)] = overrides.server.flag_names()
    if overrides.tasks is not None:
        paths = data.get("paths")
        data["paths"] = paths = dict(paths) if isinstance(paths, dict) else {}
        paths["tasks"] = str(resolved_file(overrides.tasks))
        flagged[("paths", "tasks")] = "--tasks"

    config: Config | None = None
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        problems.extend(_config_problems(doc, exc, sources, skip=[loc for loc, _ in substituted.problems]))
    if problems or config is None:
        raise ConfigFileError(sorted(unique_problems(problems), key=lambda problem: problem.line or 0))

    config = config.model_copy(
        update={
            "server": config.server.resolve_paths(base_dir),
            "paths": config.paths.resolve(base_dir),
            "check": config.check.resolve(base_dir),
        }
    )
    config._source = None if missing_ok and not os.path.lexists(path) else resolved(path)
    config._base_dir = base_dir
    config._secrets = substituted.secrets
    config._dotenv = dotenv
    config._process_environ = environ
    config._document = doc if config._source is not None else None
    config._flag_sources = flagged
    return config


def _server_with_flags(
    doc: YamlDocument, raw_server: Any, flags: ServerOverride, base_dir: Path
) -> tuple[ServerConfig, list[Problem]]:
    """Apply the server-selection flags over the file's server section.

    The section is validated on its own first: its mistakes are still mistakes
    in the file, even when the flags replace how the server is reached. Errors
    in the flags themselves (or in an mcp.json they name) are raised at once.
    """
    file_server: ServerConfig | None = None
    problems: list[Problem] = []
    if raw_server is not None:
        try:
            file_server = ServerConfig.model_validate(raw_server).resolve_paths(base_dir)
        except ValidationError as exc:
            problems.extend(problems_from_validation(doc, exc, ServerConfig, prefix=("server",)))
    return flags.resolve(file_server, base_dir=base_dir), problems


def _config_problems(
    doc: YamlDocument, exc: ValidationError, sources: Mapping[Loc, str], skip: list[Loc]
) -> list[Problem]:
    problems = []
    for problem in problems_from_validation(doc, exc, Config, sources=sources, skip=skip):
        if problem.message == "field 'server': is required":
            problem = Problem(
                problem.source,
                problem.line,
                "field 'server': is required: describe the server under test (`command` or `url`), "
                "or pass --command, --url or --from-mcp-json",
            )
        problems.append(problem)
    return problems
