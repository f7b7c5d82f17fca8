"""The demo runner (provider `demo`): the native runner with a scripted model instead of an LLM.

Why it exists: `doit loop` must run offline out of the box, with no key and no
network. The scripted model is a pydantic-ai `FunctionModel`, so it runs
through exactly the same agent, MCP toolset, capture proxy and trace conversion
as a real model; it is labelled `scripted demo model` wherever a model is
named, and its token usage is estimated.

Which scripted model, one rule: the server's folder may hold a demo agent
written for that server, `demo_agent.py`; without one, the package's generic
scripted agent (`runners/scripted.py`) runs. The server's folder is
`server.repo` when config.yaml sets it (for the bundled example, the workspace
repository seeded from `examples/emailindex`), else the stdio server's `cwd`.
Phase 1 and the Phase 0 agent (tasks without reference calls) both run here.

A demo agent is a plain Python file that defines

    def demo_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse

the function a pydantic-ai `FunctionModel` calls for each model request (it
may be async): `messages` is the history so far, `info.function_tools` the
server's tools. It may import pydantic-ai and the public helpers
`mcpipechekr.runners.messages.user_prompt` and `tool_results`. It is loaded by
file path under a module name of its own, anew for each run, and writes no
bytecode into the repository (that would leave it dirty).

Loading it runs its code in MCPipeChekr's process, with the same trust as
starting the server from that folder: only use a server folder you would run.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import FunctionDef, FunctionModel

from mcpipechekr.config import ServerConfig
from mcpipechekr.errors import UserError
from mcpipechekr.runners.base import DEMO_MODEL_LABEL, RunnerName, RunRequest
from mcpipechekr.runners.native import NativeRunner
from mcpipechekr.runners.scripted import scripted_model

DEMO_AGENT_FILE = "demo_agent.py"
DEMO_AGENT_FUNCTION = "demo_model"


def server_folder(server: ServerConfig) -> Path | None:
    """Where the server's own files are: `repo` if set, else the stdio `cwd`; None for neither."""
    folder = server.repo or (server.cwd if server.transport == "stdio" else None)
    return Path(folder) if folder else None


def demo_agent_path(server: ServerConfig) -> Path | None:
    """The server's `demo_agent.py`, if its folder has one."""
    folder = server_folder(server)
    path = folder / DEMO_AGENT_FILE if folder is not None else None
    return path if path is not None and path.is_file() else None


class _SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """Loads a source file without writing `__pycache__` beside it (in the server's repository)."""

    def set_data(self, path: str, data: bytes, *, _mode: int = 0o666) -> None:
        return None


def load_demo_module(path: Path) -> ModuleType:
    """Run a demo agent file as a module of its own; a UserError naming the file and line if it fails."""
    path = path.resolve()
    name = f"mcpipechekr_demo_agent_{hashlib.sha256(str(path).encode()).hexdigest()[:12]}"
    loader = _SourceOnlyLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    assert spec is not None  # a loader was given
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up by name while the file runs
    try:
        loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise UserError(
            f"{_where(path, exc)}: the demo agent failed to load: {type(exc).__name__}: {exc}"
        ) from exc
    return module


def load_demo_agent(path: Path) -> FunctionDef:
    """The `demo_model` function of a demo agent file; a UserError naming the file if it has none."""
    function = getattr(load_demo_module(path), DEMO_AGENT_FUNCTION, None)
    if not callable(function):
        raise UserError(
            f"{path}: a demo agent must define `{DEMO_AGENT_FUNCTION}(messages, info)`, the function a "
            "pydantic-ai FunctionModel calls (docs/runners.md, Demo model)"
        )
    return function


def _where(path: Path, exc: BaseException) -> str:
    """`file:line` of the failure inside the agent file (a syntax error's own line), else the file."""
    if isinstance(exc, SyntaxError) and exc.lineno:
        return f"{path}:{exc.lineno}"
    lines = [frame.lineno for frame in traceback.extract_tb(exc.__traceback__) if frame.filename == str(path)]
    return f"{path}:{lines[-1]}" if lines and lines[-1] else str(path)


def demo_function(server: ServerConfig) -> FunctionDef:
    """The scripted model for this server: its folder's demo agent, else the generic one."""
    path = demo_agent_path(server)
    return load_demo_agent(path) if path is not None else scripted_model


class DemoRunner(NativeRunner):
    """The native runner driving the scripted demo model (provider `demo`); usage is estimated."""

    name: ClassVar[RunnerName] = "demo"
    estimate_usage: ClassVar[bool] = True

    def __init__(self) -> None:
        super().__init__(stream=False)

    def build_model(self, request: RunRequest) -> Any:
        return FunctionModel(demo_function(request.config.server), model_name=DEMO_MODEL_LABEL)

    def model_label(self, request: RunRequest, messages: list[ModelMessage]) -> str | None:
        return DEMO_MODEL_LABEL
