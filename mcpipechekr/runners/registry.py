"""Which runner drives an agent for a provider: demo for `demo`, else the one chosen (native by default).

Runner modules are imported only when chosen: the native runner pulls in
pydantic-ai's model clients, and the opencode and Claude Code runners need
nothing of it; a missing or broken runner module must not stop the others.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable
from typing import Literal

from mcpipechekr.config import Config
from mcpipechekr.errors import UserError
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.runners.base import Runner

AgentRunner = Literal["native", "opencode", "claude-code"]
AGENT_RUNNERS: tuple[AgentRunner, ...] = ("native", "opencode", "claude-code")
DEFAULT_RUNNER: AgentRunner = "native"
RUNNERS_WITH_BUILTIN_TOOLS: tuple[AgentRunner, ...] = ("opencode", "claude-code")
"""Agent CLIs that bring tools of their own (shell, files, ...), removed unless `keep_builtin_tools`."""

OpencodeMode = Literal["serve", "run"]
OPENCODE_MODES: tuple[OpencodeMode, ...] = ("serve", "run")
DEFAULT_OPENCODE_MODE: OpencodeMode = "serve"
"""How the opencode runner drives opencode: `serve`, one `opencode serve` per run and an HTTP session
per attempt (runners/opencode_serve.py); `run`, one `opencode run` process per attempt."""

RUNNER_CLASSES: dict[str, str] = {
    "native": "mcpipechekr.runners.native:NativeRunner",
    "demo": "mcpipechekr.runners.demo:DemoRunner",
    "opencode": "mcpipechekr.runners.opencode:OpencodeRunner",
    "claude-code": "mcpipechekr.runners.claude_code:ClaudeCodeRunner",
}
"""Runner name -> `module:Class`; each class is built with the effective Config."""


def runner_name_for(spec: ProviderSpec, runner: str = DEFAULT_RUNNER) -> str:
    """The runner that serves `spec`: `demo` always runs the scripted demo model, whatever `runner` says."""
    if spec.is_demo:
        return "demo"
    if runner not in AGENT_RUNNERS:
        raise UserError(f"unknown runner '{runner}': use one of {', '.join(AGENT_RUNNERS)}")
    return runner


def load_runner_class(name: str) -> type:
    """Import a runner class by its registry name; a UserError says what is missing."""
    target = RUNNER_CLASSES.get(name)
    if target is None:
        raise UserError(f"unknown runner '{name}': use one of {', '.join(RUNNER_CLASSES)}")
    module_name, class_name = target.split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            raise UserError(
                f"the {name} runner is not available in this installation ({module_name})"
            ) from None
        raise UserError(
            f"the {name} runner needs the Python package '{exc.name}', which is not installed"
        ) from None
    return getattr(module, class_name)


def get_runner(
    spec: ProviderSpec,
    config: Config,
    runner: str = DEFAULT_RUNNER,
    *,
    keep_builtin_tools: bool = False,
    opencode_mode: str = DEFAULT_OPENCODE_MODE,
) -> Runner:
    """A runner instance for one provider (see `runner_name_for`).

    A runner class is built with no arguments (a RunRequest carries the config),
    or with the Config when its constructor requires one. `keep_builtin_tools`
    goes to the runners that take it (the agent CLIs); the others have no tools
    but the server's; `opencode_mode` to the opencode runner (its `mode`).
    """
    cls = load_runner_class(runner_name_for(spec, runner))
    parameters = inspect.signature(cls).parameters
    required = [
        parameter
        for parameter in parameters.values()
        if parameter.default is inspect.Parameter.empty
        and parameter.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    keeps = keep_builtin_tools and "keep_builtin_tools" in parameters
    options: dict[str, object] = {"keep_builtin_tools": True} if keeps else {}
    if "mode" in parameters and cls.name == "opencode":
        options["mode"] = opencode_mode
    return cls(config, **options) if required else cls(**options)


def runner_factory(
    config: Config,
    runner: str = DEFAULT_RUNNER,
    *,
    keep_builtin_tools: bool = False,
    opencode_mode: str = DEFAULT_OPENCODE_MODE,
) -> Callable[[ProviderSpec], Runner]:
    """Provider -> runner for a Phase 1 run, with the run's runner flags checked once, up front."""
    if opencode_mode not in OPENCODE_MODES:
        raise UserError(f"unknown opencode mode '{opencode_mode}': use one of {', '.join(OPENCODE_MODES)}")
    if keep_builtin_tools and runner not in RUNNERS_WITH_BUILTIN_TOOLS:
        raise UserError(
            f"--keep-builtin-tools is for the agent CLIs ({', '.join(RUNNERS_WITH_BUILTIN_TOOLS)}); "
            f"the {runner} runner's agent has no tools but the server's"
        )
    return functools.partial(
        get_runner,
        config=config,
        runner=runner,
        keep_builtin_tools=keep_builtin_tools,
        opencode_mode=opencode_mode,
    )


CLI_PROGRAMS = {
    "opencode": ("opencode", "MCPIPECHEKR_OPENCODE"),
    "claude-code": ("claude", "MCPIPECHEKR_CLAUDE"),
}
"""The agent CLI each CLI runner drives, and the variable that may name its path."""


@functools.cache
def runner_version(name: str) -> str | None:
    """The runner's version as a run records it: the agent CLI's `--version`, the pydantic-ai package
    the native runner drives, the harness for `demo`; None when it cannot be asked (not installed)."""
    import os
    import shutil
    import subprocess
    from importlib.metadata import PackageNotFoundError, version

    if name == "demo":
        from mcpipechekr import __version__

        return f"mcpipechekr {__version__}"
    if name == "native":
        try:
            return f"pydantic-ai {version('pydantic-ai-slim')}"
        except PackageNotFoundError:
            return None
    program, env_var = CLI_PROGRAMS.get(name, (None, None))
    binary = (os.environ.get(env_var) if env_var else None) or (shutil.which(program) if program else None)
    if not binary:
        return None
    try:
        done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    line = (done.stdout or done.stderr).strip().splitlines()
    return f"{program} {line[0][:80]}" if done.returncode == 0 and line else None
