"""config.yaml: how to reach the server under test, which models run each phase, and the knobs.

Loading (`load_config`) happens in this order, and the result is the *effective*
configuration, the one later recorded in a run's manifest:

1. read the YAML with the line of every key (`_util.yamlsrc`), so each problem
   is reported as `config.yaml:LINE: field 'a.b': message`;
2. substitute `${NAME}` / `${NAME:-default}` from the process environment and
   a `.env` file beside config.yaml (the process environment wins);
3. apply command-line overrides (server-selection flags, `--phaseN-provider`,
   `--tasks`): flags beat the file. A provider flag's string goes into the
   data like the file's own, so it is parsed by the same validator and a bad
   one is reported under the flag's name;
4. validate with the models below and resolve relative paths against
   config.yaml's folder.

Secrets: every value substituted from the environment, and every header and
server environment value, is a secret. `Config.redacted_dump()` and
`Config.config_hash` never contain them, and `Config.redactor` scrubs them from
any text or JSON a later step is about to write.

Provider keys: the `.env` read in step 2 also serves the models. `.env` is
never loaded into `os.environ`, because the server under test inherits our
environment and must not be handed secrets it did not ask for; instead
`Config.environ` is the merged view (`.env` overlaid by the process
environment) that `llm.build_model`, the agent-CLI runners and the fix agents
take keys from, and `Config.provider_env()` the provider variables they pass
on. Every `.env` value, and every provider key in use, is a secret too.
"""

from __future__ import annotations

import os
import shlex
import string
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol

from pydantic import (
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from mcpipechekr._util.fields import MAX_SECONDS, Count, Number, StrictModel
from mcpipechekr._util.hashing import sha256_json
from mcpipechekr._util.redact import Redactor, command_line_secrets, url_secrets
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
from mcpipechekr.providers import (
    AGENT_CLI_ENV,
    BUILTIN_ENDPOINTS,
    DEMO,
    PROVIDER_ENV,
    EndpointConfig,
    ProviderSpec,
    endpoint_for,
    parse_provider,
    provider_env_names,
)

DEFAULT_CONFIG_FILE = "config.yaml"
MASK = "***"

_SECRET_WORDS = (
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIALS",
    "AUTH",
    "COOKIE",
    "DSN",
)
_SECRET_ENDINGS = ("APIKEY", "TOKEN", "PASSWORD", "SECRET")


def secret_name(name: str) -> bool:
    """Whether an environment variable's name says its value is a secret (`GITHUB_TOKEN`, `DB_PASSWORD`).

    Judged by the name's `_`-separated words, so `API_KEY`, `APIKEY` and `PGPASSWORD` are
    secrets and `KEYBOARD_LAYOUT` or `HOCKEY_TEAM` are not.
    """
    words = name.upper().replace("-", "_").split("_")
    return any(word in _SECRET_WORDS or word.endswith(_SECRET_ENDINGS) for word in words)


@dataclass(frozen=True)
class ProviderFlag:
    """The command-line flag that overrides one phase's provider, `--phaseN-provider`.

    Both front ends build their flags from `PROVIDER_FLAGS` (click options in
    `cli.common`, doit params in `graph`), so a phase's flag is spelled and
    explained once and adding a phase is one entry here plus its
    `ProvidersConfig` field.
    """

    phase: str
    """The `providers.<phase>` field the flag overrides."""
    help: str
    """What the model of this phase does, as the flag's help shows it."""

    @property
    def name(self) -> str:
        """The flag without its dashes: `phase1-provider`."""
        return f"{self.phase}-provider"

    @property
    def flag(self) -> str:
        """The flag as typed and as error messages name it: `--phase1-provider`."""
        return f"--{self.name}"

    @property
    def dest(self) -> str:
        """The parameter the flag's value is stored under: `phase1_provider`."""
        return f"{self.phase}_provider"


PROVIDER_FLAGS: tuple[ProviderFlag, ...] = (
    ProviderFlag(
        "phase0",
        "Model for the phase-0 agent and judge (overrides providers.phase0); demo: the scripted demo "
        "model for tasks without reference calls, and rule-based plausibility.",
    ),
    ProviderFlag(
        "phase05",
        "Model for the tool-selection test (overrides providers.phase05), e.g. openai/gpt-4o-mini; "
        "demo: the offline lexical selector.",
    ),
    ProviderFlag(
        "phase1",
        "Model for the agent (overrides providers.phase1); `demo` is the offline scripted demo model.",
    ),
    ProviderFlag(
        "phase2",
        "Model that reads the traces and writes the narrative (overrides providers.phase2); "
        "demo: the rule-based analysis alone.",
    ),
    ProviderFlag(
        "phase3",
        "Model the fix agent uses (overrides providers.phase3), e.g. anthropic/claude-sonnet-4-6.",
    ),
)
PHASES: tuple[str, ...] = tuple(flag.phase for flag in PROVIDER_FLAGS)


def provider_flag(phase: str) -> ProviderFlag:
    """The `--phaseN-provider` flag of `phase`; ValueError for a phase that has none."""
    for flag in PROVIDER_FLAGS:
        if flag.phase == phase:
            return flag
    raise ValueError(f"unknown phase {phase!r} (phases: {', '.join(PHASES)})")


def _stringify_numbers(value: Any) -> Any:
    """`args: [--port, 8765]` and `env: {PORT: 8765}` mean strings; YAML reads the numbers as ints."""
    if isinstance(value, list):
        return [
            str(item) if isinstance(item, int | float) and not isinstance(item, bool) else item
            for item in value
        ]
    if isinstance(value, dict):
        return {
            key: str(item) if isinstance(item, int | float) and not isinstance(item, bool) else item
            for key, item in value.items()
        }
    return value


def _resolve_command(command: str) -> str:
    """`python`/`python3` mean the interpreter running MCPipeChekr: the bundled example runs in our venv."""
    return sys.executable if command in ("python", "python3") else command


def _absolute(path: str | None, base_dir: Path) -> str | None:
    if path is None:
        return None
    candidate = Path(path).expanduser()
    return str(candidate if candidate.is_absolute() else resolved(base_dir / candidate))


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

    _numbers_as_strings = field_validator("args", "env", mode="before")(_stringify_numbers)

    def resolved_command(self) -> str:
        """The executable to spawn (see `python` rule above)."""
        return _resolve_command(self.command)

    def resolve_paths(self, base_dir: Path) -> LaunchSpec:
        """A copy whose relative `cwd` is made absolute against `base_dir`."""
        return self.model_copy(update={"cwd": _absolute(self.cwd, base_dir)})


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

    _numbers_as_strings = field_validator("args", "env", "headers", mode="before")(_stringify_numbers)

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
        return None if self.command is None else _resolve_command(self.command)

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
                "cwd": _absolute(self.cwd, base_dir),
                "repo": _absolute(self.repo, base_dir),
                "repo_template": _absolute(self.repo_template, base_dir),
                "start": self.start.resolve_paths(base_dir) if self.start else None,
            }
        )


def _demo() -> ProviderSpec:
    return ProviderSpec(provider=DEMO)


class ProvidersConfig(StrictModel):
    """Which model runs each phase, as provider strings, plus named OpenAI-compatible endpoints."""

    # Declared first: pydantic validates fields in order, so the phase validators can see the endpoint names.
    endpoints: dict[str, EndpointConfig] = Field(
        default_factory=dict,
        description="Named OpenAI-compatible endpoints usable as providers: {name: {base_url, api_key_env}}.",
    )
    phase0: ProviderSpec = Field(
        default_factory=_demo, description="Phase 0 (baseline answers for the tasks)."
    )
    phase05: ProviderSpec = Field(
        default_factory=_demo, description="Phase 0.5 (tool-description evaluation)."
    )
    phase1: ProviderSpec = Field(
        default_factory=_demo, description="Phase 1 (the agent that runs the tasks blind)."
    )
    phase2: ProviderSpec = Field(
        default_factory=_demo, description="Phase 2 (evaluating traces into bug reports)."
    )
    phase3: ProviderSpec = Field(default_factory=_demo, description="Phase 3 (the fix loop).")

    @field_validator(*PHASES, mode="before")
    @classmethod
    def _parse(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, ProviderSpec):
            return value
        if not isinstance(value, str):
            raise ValueError("must be a provider string such as openai/gpt-4o or demo")
        return parse_provider(value, endpoints=info.data.get("endpoints", {}))

    def for_phase(self, phase: str) -> ProviderSpec:
        if phase not in PHASES:
            raise ValueError(f"unknown phase {phase!r} (phases: {', '.join(PHASES)})")
        return getattr(self, phase)

    def endpoint_for(self, spec: ProviderSpec) -> EndpointConfig | None:
        """The OpenAI-compatible endpoint a provider names (configured first, then built-in), else None."""
        return endpoint_for(spec, self.endpoints)

    def parse_flag(self, phase: str, text: str) -> ProviderSpec:
        """Another value of `phase`'s provider flag, parsed against these endpoints.

        For a command that takes its flag more than once (`run` compares
        models): the first value is applied at load like any override, the
        others are parsed here, and a bad one is reported as `load_config`
        reports the first, under the flag's name.
        """
        flag = provider_flag(phase)
        try:
            return parse_provider(text, endpoints=self.endpoints)
        except ValueError as exc:
            raise ConfigFileError([Problem(flag.flag, None, str(exc))]) from None

    def key_env_names(self) -> list[str]:
        """Every API key variable a provider of this config may read: the tables' and the endpoints'."""
        names = {*AGENT_CLI_ENV, *(name for entry in PROVIDER_ENV.values() for name in entry.keys)}
        names.update(
            endpoint.api_key_env
            for endpoint in (*BUILTIN_ENDPOINTS.values(), *self.endpoints.values())
            if endpoint.api_key_env
        )
        return sorted(names)


class ThresholdsConfig(StrictModel):
    """Cut-offs for findings; all are fractions in [0, 1]."""

    tef_precision_warning: Number = Field(
        default=0.7,
        ge=0,
        le=1,
        description="Warn about a tool whose selection precision (description evaluation) is below this; "
        "without a model (the lexical selector) it is a note instead.",
    )
    open_ended_divergence: Number = Field(
        default=0.2,
        ge=0,
        le=1,
        description="Flag an open-ended answer that diverges from the baseline by more than this, "
        "for a person to read (it never fails the answer).",
    )
    overlap: Number = Field(
        default=0.85,
        ge=0,
        le=1,
        description="Report two tools whose descriptions overlap at least this much.",
    )
    misleading_confidence: Number = Field(
        default=0.8,
        ge=0,
        le=1,
        description="Confidence needed before a tool description is reported as misleading.",
    )


class TimeoutsConfig(StrictModel):
    """Wall-clock limits in seconds, and the model-request budget of one attempt."""

    tool_call_s: Number = Field(
        default=60.0, gt=0, le=MAX_SECONDS, description="One tool call to the server under test."
    )
    task_s: Number = Field(default=600.0, gt=0, le=MAX_SECONDS, description="One agent run of one task.")
    phase_s: Number = Field(
        default=3600.0, gt=0, le=MAX_SECONDS, description="One whole phase (all tasks and repetitions)."
    )
    max_requests: Count = Field(
        default=50,
        ge=1,
        le=100_000,
        description="Model requests one Phase 1 attempt may make; reaching it ends it as incomplete.",
    )


class PathsConfig(StrictModel):
    """Where inputs and outputs live; relative paths are taken from config.yaml's folder."""

    tasks: Path = Field(default=Path("tasks.yaml"), description="The task file.")
    runs: Path = Field(default=Path("runs"), description="Folder of run directories.")
    home: Path = Field(default=Path(".mcpipechekr"), description="Working state: workspaces, caches, logs.")

    def resolve(self, base_dir: Path) -> PathsConfig:
        absolute = {
            name: Path(_absolute(str(getattr(self, name)), base_dir)) for name in type(self).model_fields
        }
        # the task file keeps its own name (a link is not followed here): messages name what the user wrote
        absolute["tasks"] = resolved_file(base_dir / self.tasks.expanduser())
        return PathsConfig(**absolute)


class CheckConfig(StrictModel):
    """`mcpipechekr check`: what the server should offer, the cases to run, and response budgets."""

    cases: Path | None = Field(
        default=None,
        description="Cases file for the functional layer (e.g. cases.yaml); none: layer skipped.",
    )
    expected_failures: Path | None = Field(
        default=None, description="YAML list of check or case ids allowed to fail, each with a reason."
    )
    call_timeout_s: Number = Field(
        default=30.0, gt=0, le=MAX_SECONDS, description="Limit for each call a check makes."
    )
    expected_tool_count: Count | None = Field(
        default=None,
        ge=0,
        le=100_000,
        description="How many tools the server should list; none: not checked.",
    )
    expected_tools: list[str] = Field(
        default_factory=list, description="Tool names the server must list (its canonical tool set)."
    )
    budget_tokens: Count = Field(
        default=4000,
        gt=0,
        le=100_000_000,
        description="Default response budget per tool call, in estimated tokens.",
    )
    tool_budgets: dict[str, Annotated[Count, Field(gt=0, le=100_000_000)]] = Field(
        default_factory=dict, description="Per-tool response budgets in estimated tokens, by tool name."
    )
    read_only: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=list,
        description="Tools the server's author trusts to only read although it does not annotate them: "
        "check, baseline and propose call them as if annotated readOnlyHint: true (never one annotated "
        "destructiveHint: true or readOnlyHint: false). Written by `check --trust-read-only` and `init`.",
    )
    synthesize: bool = Field(
        default=True,
        description="Synthesize arguments for PC-10 (schema, the server's paths, other tools' results) "
        "until a read-only tool answers; false: one call with a case's or minimal arguments.",
    )
    synthesis_max_calls: Count = Field(
        default=8, ge=1, le=100, description="Most argument sets PC-10 tries per tool (synthesis on)."
    )
    synthesis_time_s: Number = Field(
        default=5.0,
        gt=0,
        le=MAX_SECONDS,
        description="Seconds after which PC-10 starts no further argument set for a tool.",
    )

    def resolve(self, base_dir: Path) -> CheckConfig:
        return self.model_copy(
            update={
                name: Path(_absolute(str(getattr(self, name)), base_dir))
                for name in ("cases", "expected_failures")
                if getattr(self, name) is not None
            }
        )


class ReviewConfig(StrictModel):
    """The human review between the evaluation and the fix."""

    web: bool = Field(
        default=False,
        description="Decide in the browser: the loop's review serves the review page on 127.0.0.1 and "
        "waits for the decision made there (as `doit loop --web-review`).",
    )


LoopStop = Literal["no_server_bugs", "kpis_met"]
"""When the loop ends by itself: `no_server_bugs` when a fix step has nothing left to commit (the
behaviour from before KPIs existed), `kpis_met` as soon as a run meets every configured KPI target."""


class LoopConfig(StrictModel):
    """The reviewed fix loop."""

    max_iterations: Count = Field(
        default=3, ge=1, le=1000, description="Most evaluate-fix-verify rounds in one `loop`."
    )
    stop_when: LoopStop = Field(
        default="no_server_bugs",
        description="`no_server_bugs`: the loop ends when a fix step commits nothing (no server-side bug "
        "left to fix); `kpis_met`: it also ends, before the review, at the first run that meets every "
        "configured `kpi` target.",
    )


class KpiConfig(StrictModel):
    """Targets of the key figures every report marks met / not met (docs/kpi.md); `null` turns one off.

    Why targets rather than figures alone: a loop can only say it is done, and a
    reader can only tell good from bad, against a number agreed beforehand.
    """

    call_efficiency_ratio: Number | None = Field(
        default=1.3,
        gt=0,
        le=1000,
        description="Most tool calls made per call the baseline needs (calls made / baseline minimum "
        "calls, over attempts of tasks with a known minimum).",
    )
    correctness: Number | None = Field(
        default=0.95,
        ge=0,
        le=1,
        description="Least share of decided answers that are correct (checked or judged correct / "
        "decided attempts).",
    )
    selection_precision: Number | None = Field(
        default=0.85,
        ge=0,
        le=1,
        description="Least tool-selection precision of the lint's selection test (tef_report.json: the "
        "mean precision of the tools the selector picked).",
    )
    gap_cost_falling: bool | None = Field(
        default=True,
        description="`true`: the token cost of the gap (every bug's gap x occurrences) must fall run "
        "after run, or be 0; `null` or `false` turns it off.",
    )
    regression_rate: Number | None = Field(
        default=0.0,
        ge=0,
        le=1,
        description="Most regressions per fix claimed (closed findings that failed again), over the "
        "session's runs.",
    )


FixAgentName = Literal["opencode", "claude-code", "codex", "aider", "demo", "shell", "none"]
FIX_PLACEHOLDERS = ("prompt", "prompt_file", "model", "provider_model", "repo", "bug_id", "python")
"""What a fix agent command may name in braces; see docs/fix.md for each."""
TEST_PLACEHOLDERS = ("repo", "python")
"""What `fix.test_command` may name in braces: the repository and the interpreter running MCPipeChekr."""


def template_fields(template: str) -> list[str]:
    """The `{name}` placeholders of a command template (`{{`/`}}` are literal braces)."""
    return [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]


def _check_placeholders(template: str, known: tuple[str, ...]) -> None:
    """Refuse an unmatched brace or a `{name}` that nothing fills in, naming the known ones."""
    try:
        names = template_fields(template)
    except ValueError as exc:  # an unmatched brace
        raise ValueError(f"{exc}; write a literal brace as {{{{ or }}}}") from None
    unknown = sorted({name for name in names if name not in known})
    if unknown:
        raise ValueError(
            f"unknown placeholder(s) {', '.join('{' + name + '}' for name in unknown)} "
            f"(known: {', '.join('{' + name + '}' for name in known)})"
        )


class FixConfig(StrictModel):
    """Phase 3: which coding agent fixes an approved bug, and how long it may try."""

    agent: FixAgentName = Field(
        default="opencode",
        description="The fix agent: a built-in command template (opencode, claude-code, codex, aider, "
        "demo), `shell` for the command in `command`, or `none`: evaluate only, nothing is fixed.",
    )
    command: str | None = Field(
        default=None,
        description="With `agent: shell`: the command line, run by /bin/sh in the server's repository, "
        "with {prompt}, {prompt_file}, {model}, {provider_model}, {repo}, {bug_id}, {python} filled in.",
    )
    max_iterations: Count = Field(
        default=5,
        ge=1,
        le=1000,
        description="Most runs of the agent on one bug before it is recorded as unresolved.",
    )
    timeout_s: Number = Field(
        default=1800.0, gt=0, le=MAX_SECONDS, description="Wall-clock limit of one agent run."
    )
    exclude: list[str] = Field(
        default_factory=list,
        description="Glob patterns (repository-relative) of files the agent may leave behind that are "
        "never committed, e.g. its own logs.",
    )
    test_command: str | list[str] | None = Field(
        default=None,
        description="The repository's own tests, run in the server's repository after the agent claims "
        "completion and before the commit: a command line (run by /bin/sh) or an argv list (run "
        "without a shell), with {repo} and {python} filled in. A failing run is never committed: its "
        "output goes back to the agent as the next run's feedback.",
    )
    test_timeout_s: Number = Field(
        default=600.0,
        gt=0,
        le=MAX_SECONDS,
        description="Wall-clock limit of one `test_command` run; past it the tests fail.",
    )
    sandbox: Literal["on", "off"] = Field(
        default="on",
        description="`on`: every fix agent but `demo` runs in a bubblewrap sandbox (writes only in the "
        "repository, no credentials, no process outlives its run); the fix refuses to start where bwrap "
        "cannot run. `off`: the agent runs unconfined, with your rights (recorded in fix.json, printed at "
        "every fix).",
    )

    @field_validator("command")
    @classmethod
    def _known_placeholders(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.strip():
            raise ValueError("must not be empty")
        _check_placeholders(value, FIX_PLACEHOLDERS)
        return value

    @field_validator("sandbox", mode="before")
    @classmethod
    def _yaml_switch(cls, value: object) -> object:
        """YAML reads a bare `off` and `on` as booleans; they mean the words."""
        if value is True:
            return "on"
        if value is False:
            return "off"
        return value

    @field_validator("test_command")
    @classmethod
    def _test_command_placeholders(cls, value: str | list[str] | None) -> str | list[str] | None:
        if value is None:
            return None
        parts = [value] if isinstance(value, str) else value
        if not parts or not parts[0].strip():
            raise ValueError("must not be empty")
        for part in parts:
            _check_placeholders(part, TEST_PLACEHOLDERS)
        return value

    @model_validator(mode="after")
    def _command_for_shell(self) -> FixConfig:
        if self.agent == "shell" and self.command is None:
            raise ValueError("`agent: shell` needs `command`, the command line that runs your fix agent")
        if self.agent != "shell" and self.command is not None:
            raise ValueError(
                f"`command` is only used with `agent: shell`; `{self.agent}` has a built-in command "
                "(remove `command`, or set `agent: shell`)"
            )
        return self


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


class ServerOverride(Protocol):
    """Server-selection flags as `load_config` applies them over config.yaml's `server` section.

    `server.target.ServerFlags` is the implementation. Resolving flags builds a
    `ServerConfig`, so the flags live a layer above this module; loading needs
    only these members, and this protocol keeps config.py free of that import.
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
