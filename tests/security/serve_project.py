"""A project `mcpipechekr serve` is bound to, and client sessions against it, for the attack tests.

The project is a folder with a config.yaml naming a real server
(tests/servers/findings_server.py) and a `.git/hooks/` folder to aim at; a
finding about that server's `lookup` tool is registered in the findings home
the way promote registers one. `serve` is started the way another program's
MCP configuration starts it (`serve_argv`, `serve_env`) and driven by the MCP
SDK's client, so every call crosses the real stdio transport.

Files outside the home hold `SECRET` in the shape of /etc/shadow lines: no
answer may ever contain it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import yaml
from findings_sessions import LOOKUP, register_lookup
from mcp import Client, StdioServerParameters

from mcpipechekr.check.pointer import result_text
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.verification.generate import generate_manifest
from mcpipechekr.findings.views.serve import serve_argv, serve_env

FINDINGS_SERVER = Path(__file__).resolve().parents[1] / "servers" / "findings_server.py"
SECRET = "PLANTED-7e1d44c0"
SHADOW = f"root:$6${SECRET}$Zq:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n"


@dataclass(frozen=True)
class Project:
    """A project folder, its config.yaml and the findings home `serve` is bound to."""

    root: Path
    config: Path
    home: Home


@dataclass(frozen=True)
class Answer:
    """One tool call's result: whether it was an error, and its text."""

    is_error: bool
    text: str


def bound_project(tmp_path: Path, home: Home, *, broken: bool = False, name: str = "project") -> Project:
    """A project whose config.yaml names the findings server (broken: FINDINGS_BROKEN=1 in its env),
    with the `lookup` finding registered in `home`."""
    root = tmp_path / name
    (root / ".git" / "hooks").mkdir(parents=True)
    server: dict[str, Any] = {"name": "findings", "command": "python", "args": [str(FINDINGS_SERVER)]}
    if broken:
        server["env"] = {"FINDINGS_BROKEN": "1"}
    config = root / "config.yaml"
    config.write_text(yaml.safe_dump({"server": server}), encoding="utf-8")
    register_lookup(home)
    return Project(root, config, home)


def serve_params(project: Project) -> StdioServerParameters:
    """`mcpipechekr serve` for the project, started from its folder as a client would start it."""
    argv = serve_argv(project.config)
    env = {**os.environ, **serve_env(project.home)}
    return StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=str(project.root))


def session(project: Project, calls: Sequence[tuple[str, dict[str, Any]]]) -> list[Answer]:
    """One client session: each (tool, arguments) call in order, every answer kept."""
    answers: list[Answer] = []

    async def run() -> None:
        async with Client(serve_params(project)) as client:
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                answers.append(Answer(bool(result.is_error), result_text(result)))

    anyio.run(run)
    return answers


def tool_schemas(project: Project) -> dict[str, dict[str, Any]]:
    """Each served tool's input schema, by name."""
    schemas: dict[str, dict[str, Any]] = {}

    async def run() -> None:
        async with Client(serve_params(project)) as client:
            for tool in (await client.list_tools()).tools:
                schemas[tool.name] = tool.input_schema

    anyio.run(run)
    return schemas


def filled_manifest(home: Home, path: Path) -> Path:
    """A verification manifest for LOOKUP outside the home, its placeholder filled, as a client could
    write one anywhere it can write."""
    generate_manifest(home, LOOKUP, confirm_read_only=True, output=path)
    path.write_text(path.read_text().replace("'<fill: string>'", "k1"))
    return path


def files_under(root: Path) -> dict[Path, bytes]:
    """Every regular file under `root` (links not followed) and its bytes."""
    return {
        path: path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


def python_server() -> list[str]:
    """A server command a client controls: the findings server, not broken, answers every case green."""
    return [sys.executable, str(FINDINGS_SERVER)]
