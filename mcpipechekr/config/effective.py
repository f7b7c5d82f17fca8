"""The effective configuration: every section together, with what loading learnt about its secrets
and its environment.

`load_config` fills its private state (the file's lines, `.env`, substituted
values); this module turns that state into the redactor, the redacted dump and
hash recorded in a manifest, and the environment handed to models and agents.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, PrivateAttr

from mcpipechekr._util.fields import StrictModel
from mcpipechekr._util.hashing import sha256_json
from mcpipechekr._util.redact import Redactor
from mcpipechekr._util.yamlsrc import Loc, Problem, YamlDocument, environment_with_dotenv, field_path
from mcpipechekr.config.fix import FixConfig
from mcpipechekr.config.secret_names import MASK, secret_name
from mcpipechekr.config.sections import (
    CheckConfig,
    KpiConfig,
    LoopConfig,
    PathsConfig,
    ProvidersConfig,
    ReviewConfig,
    ThresholdsConfig,
    TimeoutsConfig,
)
from mcpipechekr.config.server import ServerConfig
from mcpipechekr.providers import provider_env_names


class Config(StrictModel):
    """The effective configuration: config.yaml with `${ENV}` values and command-line overrides applied."""

    server: ServerConfig = Field(description="The MCP server under test.")
    providers: ProvidersConfig = Field(default_factory=ProvidersConfig)
    thresholds: ThresholdsConfig = Field(default_factory=ThresholdsConfig)
    timeouts: TimeoutsConfig = Field(default_factory=TimeoutsConfig)
    paths: PathsConfig = Field(default_factory=PathsConfig)
    loop: LoopConfig = Field(default_factory=LoopConfig)
    review: ReviewConfig = Field(default_factory=ReviewConfig)
    kpi: KpiConfig = Field(default_factory=KpiConfig)
    fix: FixConfig = Field(default_factory=FixConfig)
    check: CheckConfig = Field(default_factory=CheckConfig)

    _source: Path | None = PrivateAttr(default=None)
    _base_dir: Path = PrivateAttr(default_factory=Path.cwd)
    _secrets: list[tuple[str, str]] = PrivateAttr(default_factory=list)
    _dotenv: dict[str, str] = PrivateAttr(default_factory=dict)
    _process_environ: Mapping[str, str] | None = PrivateAttr(default=None)
    _document: YamlDocument | None = PrivateAttr(default=None)
    _flag_sources: dict[Loc, str] = PrivateAttr(default_factory=dict)

    @property
    def source(self) -> Path | None:
        """The config.yaml this was loaded from (None when built from flags alone)."""
        return self._source

    @property
    def base_dir(self) -> Path:
        """The folder relative paths were resolved against: config.yaml's folder."""
        return self._base_dir

    @property
    def dotenv_path(self) -> Path:
        """The `.env` whose variables count as environment: beside config.yaml."""
        return self._base_dir / ".env"

    @property
    def dotenv(self) -> dict[str, str]:
        """The variables of `.env` beside config.yaml, as read when the config was loaded."""
        return dict(self._dotenv)

    @property
    def environ(self) -> dict[str, str]:
        """The environment keys are taken from: `.env` overlaid by the process environment (which wins).

        `.env` is read once, by `load_config`; the process environment is read
        now (or is the mapping `load_config` was given in its place). Never
        copied into `os.environ`: only what a model or an agent CLI needs is
        passed on (`provider_env`).
        """
        return environment_with_dotenv(self._dotenv, self._process_environ)

    def provider_env(self) -> dict[str, str]:
        """The provider variables that are set (keys, base URLs, the endpoints' `api_key_env`), by name.

        What an agent CLI (Phase 1 runner, fix agent) is given on top of the
        process environment, so a key kept in `.env` reaches it; exported values
        are the same either way, since the process environment wins.
        """
        environ = self.environ
        names = {*provider_env_names(), *self.providers.key_env_names()}
        return {name: environ[name] for name in sorted(names) if environ.get(name)}

    def provider_env_from_dotenv(self) -> list[str]:
        """The names in `provider_env` whose value comes from `.env`, not the process environment.

        The capture proxy removes these from what the server under test
        inherits through an agent CLI: it asked for none of them.
        """
        process = os.environ if self._process_environ is None else self._process_environ
        return [name for name, value in self.provider_env().items() if process.get(name) != value]

    @property
    def redactor(self) -> Redactor:
        """Scrubs this config's secrets: env-substituted values -> `${NAME}`, header/env values -> `***`."""
        return Redactor(self.secret_pairs())

    def secret_pairs(self) -> list[tuple[str, str]]:
        """(secret value, what replaces it) for every secret this config knows; the redactor's input.

        The config's own secrets, then every `.env` value and every provider key
        that is set, each as `${NAME}`.
        """
        return self._config_secret_pairs() + self._environment_secret_pairs()

    def _config_secret_pairs(self) -> list[tuple[str, str]]:
        masked = [(value, MASK) for value in self._masked_values()]
        # Substituted values come last and so win over the mask: `${NAME}` says more than `***`.
        return masked + list(self._secrets)

    def _environment_secret_pairs(self) -> list[tuple[str, str]]:
        """`.env` values, provider keys and environment variables named like secrets.

        The server under test inherits the process environment, and a server
        may echo it (a `get_env` tool, an error that prints its settings), so a
        `GITHUB_TOKEN` or `DB_PASSWORD` that config.yaml never names is still a
        secret of every file this run writes.
        """
        pairs = [(value, f"${{{name}}}") for name, value in sorted(self._dotenv.items()) if value]
        environ = self.environ
        pairs += [
            (environ[name], f"${{{name}}}") for name in self.providers.key_env_names() if environ.get(name)
        ]
        pairs += [
            (value, f"${{{name}}}") for name, value in sorted(environ.items()) if value and secret_name(name)
        ]
        return pairs

    def problem(self, loc: Loc, message: str) -> Problem:
        """A problem with the value at `loc`: `config.yaml:LINE: field 'a.b': message`.

        A value that came from a command-line flag is named by the flag instead;
        a config built without a file names the field alone.
        """
        for flagged, flag in self._flag_sources.items():
            if loc[: len(flagged)] == flagged:
                return Problem(flag, None, f"field '{field_path(loc)}': {message}")
        if self._document is None:
            return Problem("config", None, f"field '{field_path(loc)}': {message}")
        return self._document.problem(loc, f"field '{field_path(loc)}': {message}")

    def _masked_values(self) -> list[str]:
        return self.server.secret_values()

    def redacted_dump(self) -> dict[str, Any]:
        """The effective config as JSON-able data, safe to record: no secret value appears in it.

        Values substituted from the environment read `${NAME}` again; header and
        server environment values are `***` unless they were `${...}` references.
        """
        dump = self.model_dump(mode="json")
        substituted = Redactor(self._secrets, exact_min_length=1)
        server = dump["server"]
        mappings = [server["headers"], server["env"]]
        if server.get("start"):
            mappings.append(server["start"]["env"])
        for mapping in mappings:
            for key, value in mapping.items():
                scrubbed = substituted.redact(value)
                mapping[key] = scrubbed if scrubbed != value else MASK
        # The environment's values are replaced only where they occur at length: `.env` may hold short
        # values (`DEBUG=1`) that would otherwise replace every matching setting.
        dump = Redactor(self._config_secret_pairs(), exact_min_length=1).redact(dump)
        return Redactor(self._environment_secret_pairs()).redact(dump)

    def fixing_off(self) -> str | None:
        """Why the loop only evaluates (no fix step), in words; None when it fixes.

        A server without `server.repo` (installed from a package, no checkout) or
        `fix.agent: none` is evaluated: lint, traces, bug report, review. The
        review then offers `export` instead of `approve`, and nothing about
        Phase 3 (its model, its agent's CLI) is asked for.
        """
        if self.server.repo is None:  # the reason that holds whatever the agent
            return "server.repo is not set (no checkout of the server's source to commit fixes in)"
        if self.fix.agent == "none":
            return "fix.agent is `none`"
        return None

    @property
    def config_hash(self) -> str:
        """`sha256:…` of the redacted effective config: equal settings hash equally, in any key order."""
        return sha256_json(self.redacted_dump())
