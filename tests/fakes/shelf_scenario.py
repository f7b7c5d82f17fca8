"""One scripted session on tests/servers/shelf_server.py, the same whatever client drives it.

The import tests compare a session recorded by opencode or Claude Code with a
native run of the same calls, so the calls live here once: search the
catalogue for Dune (twice: the repeat is waste for Phase 2 to find), ask for
book 1 with a `fields` projection (answered with the server's planted error),
ask again without it, then answer. Replies are chosen from how many tool
results the request carries, so the script works for the native agent (plain
tool names), opencode (`shelf_<tool>`) and Claude Code (`mcp__shelf__<tool>`);
with `builtin`, the model first calls one of the client's own tools.

The session files in tests/fixtures/opencode/shelf-* and
tests/fixtures/claude_code/shelf-* were recorded with this script by
tests/fixtures/record_agent_sessions.py.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from . import anthropic_server as anthropic
from . import openai_server as openai

SHELF_SERVER = Path(__file__).resolve().parents[1] / "servers" / "shelf_server.py"
SESSION_SERVER_NAME = "shelf"
"""The name the recorded sessions' clients gave the server (their tools are `shelf_…`, `mcp__shelf__…`)."""
TASK_ID = "first-dune-novel"
PROMPT = "Which novel of the Dune series came out first? Give its id, title, author and year."
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("search_books", {"query": "Dune"}),
    ("search_books", {"query": "Dune"}),
    ("get_book", {"book_id": 1, "fields": ["title", "author", "year"]}),
    ("get_book", {"book_id": 1}),
]
BUILTIN: dict[str, tuple[str, dict[str, Any]]] = {
    "opencode": ("bash", {"command": "echo catalogue", "description": "Print a word"}),
    "claude-code": ("Bash", {"command": "echo catalogue", "description": "Print a word"}),
}
"""The client's own tool the `builtin` sessions call first: a harmless shell command."""
THINKING = "Search the catalogue for the series first."
FINAL = "The first Dune novel is Dune (id 1) by Frank Herbert, published in 1965."
TASK = {
    "task_id": TASK_ID,
    "prompt": PROMPT,
    "task_type": "deterministic",
    "expected_tool": "search_books",
    "min_calls": 2,
    "reference_calls": [
        {"tool": "search_books", "arguments": {"query": "Dune"}},
        {"tool": "get_book", "arguments": {"book_id": 1}},
    ],
}


def script(builtin: tuple[str, dict[str, Any]] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """The calls in order, without the client's prefix."""
    return ([builtin] if builtin else []) + CALLS


def openai_responder(tool_prefix: str, builtin: tuple[str, dict[str, Any]] | None = None) -> openai.Responder:
    """Chat-completions answers for an agent that names the server's tools `<tool_prefix><tool>`."""
    calls = script(builtin)

    def respond(body: dict[str, Any]) -> openai.Reply:
        if not body.get("tools"):
            return openai.text_reply("Dune catalogue")  # a request besides the task (a title)
        done = sum(1 for message in body.get("messages") or [] if message.get("role") == "tool")
        usage = {"prompt_tokens": 100 * (done + 1), "completion_tokens": 10 + done}
        if done >= len(calls):
            return openai.Reply(content=FINAL, **usage)
        name, arguments = calls[done]
        own = builtin is not None and done == 0
        return openai.tool_call_reply(
            name if own else f"{tool_prefix}{name}",
            arguments,
            reasoning=THINKING if done == 0 else None,
            **usage,
        )

    return respond


def anthropic_responder(
    tool_prefix: str, builtin: tuple[str, dict[str, Any]] | None = None
) -> anthropic.Responder:
    """Messages API answers for a client that names the server's tools `<tool_prefix><tool>`."""
    calls = script(builtin)

    def respond(body: dict[str, Any]) -> anthropic.Reply:
        if not any(name.startswith(tool_prefix) for name in anthropic.tool_names(body)):
            return anthropic.text_reply("Dune catalogue")
        done = len(anthropic.tool_results(body))
        usage = {"input_tokens": 100 * (done + 1), "output_tokens": 10 + done}
        if done >= len(calls):
            return anthropic.text_reply(FINAL, **usage)
        name, arguments = calls[done]
        own = builtin is not None and done == 0
        return anthropic.tool_use_reply(
            name if own else f"{tool_prefix}{name}",
            arguments,
            thinking=THINKING if done == 0 else None,
            **usage,
        )

    return respond


def server_config(name: str) -> dict[str, Any]:
    """config.yaml's `server` for the shelf server, under the given name."""
    return {"name": name, "command": sys.executable, "args": [str(SHELF_SERVER)]}


def write_project(
    folder: Path, server_name: str, endpoints: dict[str, Any] | None = None, **extra: Any
) -> Path:
    """config.yaml (the shelf server as `server_name`) and tasks.yaml (the one task) in `folder`."""
    (folder / "tasks.yaml").write_text(yaml.safe_dump({"tasks": [TASK]}, sort_keys=False))
    config = {
        "server": server_config(server_name),
        "providers": {"endpoints": endpoints or {}},
        "paths": {"tasks": "tasks.yaml", "runs": "runs", "home": "home"},
        "timeouts": {"tool_call_s": 30, "task_s": 120},
        **extra,
    }
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path
