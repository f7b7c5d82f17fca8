"""Which runner drives an agent for a provider: demo for `demo`, else the one chosen (native by default).

Runner modules are imported only when chosen: the native runner pulls in
pydantic-ai's model clients, and the opencode and Claude Code runners need
nothing of it; a missing or broken runner module must not stop the others.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Literal

from mcpipechekr.config import Config
from mcpipechekr.errors import UserError
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.runners.base import Runner

AgentRunner = Literal["native", "opencode", "claude-code"]
AGENT_RUNNERS: tuple[AgentRunner, ...] = ("native", "opencode", "claude-code")
DEFAULT_RUNNER: AgentRunner = "native"

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


def get_runner(spec: ProviderSpec, config: Config, runner: str = DEFAULT_RUNNER) -> Runner:
    """A runner instance for one provider (see `runner_name_for`).

    A runner class is built with no arguments (a RunRequest carries the config),
    or with the Config when its constructor requires one.
    """
    cls = load_runner_class(runner_name_for(spec, runner))
    required = [
        parameter
        for parameter in inspect.signature(cls).parameters.values()
        if parameter.default is inspect.Parameter.empty
        and parameter.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    return cls(config) if required else cls()
