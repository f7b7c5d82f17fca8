"""Preflight: the settings that would stop a later step, found from the config alone, before anything runs.

`load_config` checks each value on its own. Some settings are well-formed and
still fail when a step reaches them: the fix step with no repository to commit
in, a model whose API key is neither exported nor in `.env`, a server command
whose files are looked for in the wrong folder. Found that late, they cost a
paid Phase 1 run, or a human review whose recorded approval then fails every
later `fix`. `preflight_problems` finds them without starting the server or
calling a model, so `mcpipechekr validate` reports them and the loop can stop
at its start (`check_preflight`).

Severity:
- `error`: the step fails, whatever else happens (no `server.repo`; no key for
  a model we call ourselves; a script the server command names that is not in
  the folder it runs in; a command not on PATH).
- `warning`: the step may fail, and we cannot tell: an agent CLI (the opencode
  or Claude Code runner, a fix agent) may have a login of its own instead of a
  key in the environment.

Phases are config.yaml's provider names (`phase0` baseline, `phase05` lint,
`phase1` trace, `phase2` evaluate, `phase3` fix); `LOOP_PHASES` are those the
loop runs. Every phase starts the server, so its launch is checked whenever
any phase is asked for. Without phases (`validate`, which cannot know what the
config will be used for) all are checked, as far as the config shows they are
meant to run: a real model named for a phase says so, and the fix step is set
up once its agent could run (`fix_is_configured`: an agent that needs no model,
such as `demo`, or a Phase 3 model). A config for `check`, `lint` or `run`
alone (`mcpipechekr init` writes one) is not told that it lacks a
`server.repo`; the loop's own preflight still is. A fix agent's CLI missing
from PATH is then a warning, as the fix may run on another machine.

Blind spots: a launch is checked only where its paths can be read as paths:
the command itself when it is a relative path, and the script arguments of a
known local interpreter (`python server.py`, `node dist/index.js`); a
container, a package launcher (`npx`, `uvx`) or a shell snippet is not looked
into. A key is checked only for providers whose variables we know
(`providers.PROVIDER_ENV`, endpoints' `api_key_env`).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from mcpipechekr._util.console import err_console
from mcpipechekr._util.yamlsrc import ConfigFileError, Loc, Problem, display_path
from mcpipechekr.config import PHASES, Config, LaunchSpec
from mcpipechekr.providers import missing_key
from mcpipechekr.server.workspace import fix_repo_problems

Severity = Literal["error", "warning"]

LOOP_PHASES: tuple[str, ...] = ("phase05", "phase1", "phase2", "phase3")
"""What `doit loop` runs: lint, trace, evaluate, fix (the baseline must exist before it starts)."""

STEP_OF_PHASE = {
    "phase0": "baseline",
    "phase05": "lint",
    "phase1": "trace",
    "phase2": "evaluate",
    "phase3": "fix",
}
"""The step (doit task, command) each phase's provider serves, for messages."""

CLI_RUNNERS = ("opencode", "claude-code")
"""Phase 1 runners that drive an agent CLI, which may have a login of its own."""

SCRIPT_SUFFIXES = frozenset({".py", ".js", ".mjs", ".cjs", ".ts", ".sh", ".rb", ".pl", ".php", ".jar"})
"""An argument ending so names a file the interpreter must find."""

_INTERPRETERS = frozenset(
    {"python", "python3", "node", "deno", "bun", "uv", "ruby", "perl", "php", "sh", "bash", "zsh", "tsx"}
    | {"ts-node", "java"}
)
_PYTHON_VERSIONED = re.compile(r"^python3(\.\d+)?$")


@dataclass(frozen=True)
class PreflightProblem:
    """A setting that stops (error) or may stop (warning) the step of `phase`."""

    severity: Severity
    phase: str
    problem: Problem

    @property
    def step(self) -> str:
        return STEP_OF_PHASE.get(self.phase, self.phase)

    def __str__(self) -> str:
        return str(self.problem) if self.severity == "error" else f"warning: {self.problem}"


def preflight_problems(
    config: Config, phases: Iterable[str] | None = None, *, runner: str = "native"
) -> list[PreflightProblem]:
    """Every setting that would stop one of `phases`, errors and warnings, in config.yaml's line order.

    `phases`: config.yaml's phase names of the steps that will run
    (`LOOP_PHASES` for the loop). None (`validate`): every phase the config
    is set up for (see the module doc). `runner`: the Phase 1 runner
    (`native`, `opencode`, `claude-code`); with an agent CLI a missing Phase 1
    key is a warning. Reads the files the config names and PATH; starts
    nothing, calls nothing, writes nothing.
    """
    wanted = list(dict.fromkeys(PHASES if phases is None else phases))
    unknown = [phase for phase in wanted if phase not in PHASES]
    if unknown:
        raise ValueError(f"unknown phase(s) {', '.join(unknown)} (phases: {', '.join(PHASES)})")
    found: list[PreflightProblem] = []
    if wanted:
        found += [PreflightProblem("error", wanted[0], problem) for problem in launch_problems(config)]
    for phase in wanted:
        found += _key_problems(config, phase, runner)
    if "phase3" in wanted and phases is not None:
        found += _fix_problems(config, missing_cli="error")
    elif "phase3" in wanted and fix_is_configured(config):
        found += _fix_problems(config, missing_cli="warning")
    return sorted(dict.fromkeys(found), key=lambda item: item.problem.line or 0)


def check_preflight(config: Config, phases: Iterable[str] = LOOP_PHASES, *, runner: str = "native") -> None:
    """`preflight_problems` at the start of a run: warnings printed on stderr, errors raised together.

    Raises ConfigFileError (a UserError: printed without a traceback) listing
    every error, before any model is called or any step runs.
    """
    problems = preflight_problems(config, phases, runner=runner)
    for item in problems:
        if item.severity == "warning":
            err_console.print(str(item), markup=False, highlight=False)
    errors = [item.problem for item in problems if item.severity == "error"]
    if errors:
        raise ConfigFileError(errors)


# --- the fix step's repository ---------------------------------------------------------------------


def fix_is_configured(config: Config) -> bool:
    """Whether the fix step is set up: its agent needs no model (`demo`), or providers.phase3 names one.

    The defaults (agent `opencode`, Phase 3 `demo`) are not: that agent cannot run without a model.
    Nor is `fix.agent: none`, which turns fixing off.
    """
    from mcpipechekr.fix.agents import uses_model

    if config.fix.agent == "none":
        return False
    return not uses_model(config.fix) or config.providers.phase3.model is not None


def loop_phases(config: Config) -> tuple[str, ...]:
    """The phases `doit loop` runs on this config: all of `LOOP_PHASES`, or those before the fix when the
    loop only evaluates (`Config.fixing_off`), so nothing about Phase 3 can stop it."""
    if config.fixing_off() is not None:
        return tuple(phase for phase in LOOP_PHASES if phase != "phase3")
    return LOOP_PHASES


def _fix_problems(config: Config, *, missing_cli: Severity) -> list[PreflightProblem]:
    """The fix step's repository, its agent's model, its agent's CLI and its test command's program.

    A CLI or test program that cannot be found is reported as `missing_cli`.
    """
    from mcpipechekr.fix.agents import TEMPLATES, uses_model
    from mcpipechekr.fix.repo_tests import missing_program
    from mcpipechekr.fix.sandbox import SandboxUnavailable, require_sandbox
    from mcpipechekr.runners.cliagent import AgentCliMissing, find_cli

    found = [PreflightProblem("error", "phase3", problem) for problem in fix_repo_problems(config)]
    fix = config.fix
    template = TEMPLATES.get(fix.agent)
    provider = config.providers.phase3
    if uses_model(fix) and provider.model is None:
        found.append(
            PreflightProblem(
                "error",
                "phase3",
                config.problem(
                    ("providers", "phase3"),
                    f"is `{provider}`, and fix.agent `{fix.agent}` needs a model: set providers.phase3 to "
                    "provider/model (e.g. anthropic/claude-sonnet-4-6) or pass --phase3-provider",
                ),
            )
        )
    if template is not None and template.env_var is not None:
        try:
            find_cli(template.argv[0], template.env_var, template.install_hint)
        except AgentCliMissing as exc:
            found.append(
                PreflightProblem(
                    missing_cli, "phase3", config.problem(("fix", "agent"), f"`{fix.agent}`: {exc.message}")
                )
            )
    if fix.sandbox == "on" and fix.agent not in ("demo", "none"):
        try:
            require_sandbox()
        except SandboxUnavailable as exc:
            problem = config.problem(("fix", "sandbox"), exc.message)
            found.append(PreflightProblem(missing_cli, "phase3", problem))
    if fix.test_command is not None and config.server.repo is not None:
        program = missing_program(fix.test_command, Path(config.server.repo))
        if program is not None:
            found.append(
                PreflightProblem(
                    missing_cli,
                    "phase3",
                    config.problem(
                        ("fix", "test_command"),
                        f"runs `{program}`, which is neither on PATH nor an executable file in "
                        f"{display_path(config.server.repo)}: install it, or correct fix.test_command",
                    ),
                )
            )
    return found


# --- provider keys ---------------------------------------------------------------------------------


def _key_problems(config: Config, phase: str, runner: str) -> list[PreflightProblem]:
    """A missing key for the phase's provider, if the phase calls a model at all."""
    spec = config.providers.for_phase(phase)
    if spec.is_demo:
        return []
    agent: str | None = None  # the agent CLI that uses the key, when it is not our own code
    if phase == "phase3":
        from mcpipechekr.fix.agents import uses_model

        if not uses_model(config.fix):
            return []  # the fix agent (demo, or a shell command without {model}) does not use this provider
        agent = f"fix.agent `{config.fix.agent}`"
    elif phase == "phase1" and runner in CLI_RUNNERS:
        agent = f"the {runner} runner"
    name = missing_key(spec, config.providers.endpoints, config.environ)
    if name is None:
        return []
    message = (
        f"`{spec}` needs an API key in ${name}, which is neither exported nor in "
        f"{display_path(config.dotenv_path)}: export it, or add `{name}=...` to that .env "
        f"(the `{STEP_OF_PHASE[phase]}` step uses this provider)"
    )
    if agent is not None:
        return [
            PreflightProblem(
                "warning",
                phase,
                config.problem(("providers", phase), f"{message}, unless {agent} has a login of its own"),
            )
        ]
    return [PreflightProblem("error", phase, config.problem(("providers", phase), message))]


# --- launching the server --------------------------------------------------------------------------


def launch_problems(config: Config) -> list[Problem]:
    """Why the server's process could not start: its stdio command, or the `start` of an HTTP server.

    Both run in their `cwd`, or, without one, in the folder MCPipeChekr was
    started from, which is config.yaml's folder only by habit. A relative script
    path that is not in that folder makes the process exit at once ("can't open
    file"), and the step reports a dead server instead of the setting.
    """
    server = config.server
    if server.command is not None:
        launch = LaunchSpec(command=server.command, args=server.args, cwd=server.cwd)
        return _launch_problems(config, launch, ("server",), "server", "the server")
    if server.start is not None:
        start = server.start
        return _launch_problems(config, start, ("server", "start"), "server.start", "the start command")
    return []


def _launch_problems(config: Config, launch: LaunchSpec, loc: Loc, field: str, what: str) -> list[Problem]:
    folder = _launch_folder(config, launch.cwd)
    if folder is None:
        return [
            config.problem(
                (*loc, "cwd"),
                f"folder {display_path(launch.cwd or '')} does not exist, so {what} cannot run in it: point "
                f"{field}.cwd at the server's folder (relative to config.yaml's folder)",
            )
        ]
    problems = []
    command = launch.resolved_command()
    if "/" not in command and shutil.which(command) is None:
        problems.append(
            config.problem(
                (*loc, "command"),
                f"`{command}` is not on PATH, so {what} cannot be started: install it, or give its path",
            )
        )
    for where_named, path in _named_paths(launch):
        if _resolves(folder, path):
            continue
        if launch.cwd is not None:
            where = f"{folder} ({field}.cwd), the folder {what} runs in"
            fix = f"correct the path or {field}.cwd"
        else:
            where = f"{folder}, the folder MCPipeChekr was started from, where {what} runs without a `cwd`"
            fix = f"set {field}.cwd to the folder that holds it (relative to config.yaml's folder)"
            hint = _folder_holding(config, path)
            if hint is not None:
                fix += f"; `cwd: {hint}` would find it"
        problems.append(config.problem((*loc, *where_named), f"'{path}' is not in {where}: {fix}"))
    return problems


def _launch_folder(config: Config, cwd: str | None) -> Path | None:
    """The folder a launch runs in, as it will be; None when `cwd` names a folder that will not exist.

    A `cwd` inside a `server.repo` that `repo_template` has yet to create is read
    in the template, whose copy it will be.
    """
    if cwd is None:
        return Path.cwd()
    folder = Path(cwd)
    if folder.is_dir():
        return folder
    server = config.server
    if server.repo is not None and server.repo_template is not None and not Path(server.repo).exists():
        try:
            inside = folder.relative_to(server.repo)
        except ValueError:
            return None
        template = Path(server.repo_template) / inside
        return template if template.is_dir() else None
    return None


def _named_paths(launch: LaunchSpec) -> Iterator[tuple[Loc, str]]:
    """The relative paths a launch names, with where: its command when it is one, an interpreter's scripts."""
    if _relative_path(launch.command):
        yield ("command",), launch.command
    name = Path(launch.command).name
    interpreter = name in _INTERPRETERS or _PYTHON_VERSIONED.match(name) is not None
    if not interpreter and launch.resolved_command() != sys.executable:
        return  # a container, a package launcher, a binary: its arguments are its own business
    for index, arg in enumerate(launch.args):
        if _relative_path(arg) and (arg.startswith(("./", "../")) or Path(arg).suffix in SCRIPT_SUFFIXES):
            yield ("args", index), arg


def _relative_path(token: str) -> bool:
    """Whether a token reads as a relative file path (not a flag, a URL, a package, a shell snippet)."""
    if not token or token.startswith(("-", "@", "~", "/")) or "://" in token or "=" in token:
        return False
    if any(char.isspace() for char in token):  # `sh -c "python server.py"`: a command line, not a path
        return False
    return "/" in token or Path(token).suffix in SCRIPT_SUFFIXES


def _resolves(folder: Path, path: str) -> bool:
    """A script must exist; another path only needs its folder (the server may create the file)."""
    target = folder / path
    if Path(path).suffix in SCRIPT_SUFFIXES:
        return target.exists()
    return target.exists() or target.parent.is_dir()


def _folder_holding(config: Config, path: str) -> str | None:
    """A `cwd` to suggest: config.yaml's folder or the server's repository, if either holds `path`."""
    candidates = [config.base_dir]
    if config.server.repo is not None:
        candidates.append(Path(config.server.repo))
    for folder in candidates:
        if (folder / path).exists():
            relative = os.path.relpath(folder, config.base_dir)
            return relative
    return None
