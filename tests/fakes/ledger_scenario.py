"""One scripted session on tests/servers/ledger_server.py, the same whatever client drives it.

The calls: list one customer's orders (a list result: one text block per order
plus structuredContent), list them again (the repeat is waste for Phase 2 to
find), export the whole ledger (a result of about 300 KB that the agent CLIs
show as a preview), then answer. Replies are chosen from how many tool results
the request carries, so the script works for the native agent (plain tool
names), opencode (`ledger_<tool>`) and Claude Code (`mcp__ledger__<tool>`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from . import anthropic_server as anthropic
from . import openai_server as openai

LEDGER_SERVER = Path(__file__).resolve().parents[1] / "servers" / "ledger_server.py"
SERVER_NAME = "ledger"
TASK_ID = "ada-spend"
PROMPT = "How many orders has Ada Quill placed, and what was the total of her first one?"
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("list_orders", {"customer": "Ada Quill"}),
    ("list_orders", {"customer": "Ada Quill"}),
    ("export_ledger", {}),
]
FINAL = "Ada Quill placed 6 orders; her first one, order 1000, came to 1250 cents and was returned."
TASK = {
    "task_id": TASK_ID,
    "prompt": PROMPT,
    "task_type": "deterministic",
    "expected_tool": "list_orders",
    "min_calls": 1,
    "reference_calls": [{"tool": "list_orders", "arguments": {"customer": "Ada Quill"}}],
}


def openai_responder(tool_prefix: str) -> openai.Responder:
    """Chat-completions answers for an agent that names the server's tools `<tool_prefix><tool>`."""

    def respond(body: dict[str, Any]) -> openai.Reply:
        if not body.get("tools"):
            return openai.text_reply("Ada's orders")  # a request besides the task (a title)
        done = sum(1 for message in body.get("messages") or [] if message.get("role") == "tool")
        usage = {"prompt_tokens": 100 * (done + 1), "completion_tokens": 10 + done}
        if done >= len(CALLS):
            return openai.Reply(content=FINAL, **usage)
        name, arguments = CALLS[done]
        return openai.tool_call_reply(f"{tool_prefix}{name}", arguments, **usage)

    return respond


def anthropic_responder(tool_prefix: str) -> anthropic.Responder:
    """Messages API answers for a client that names the server's tools `<tool_prefix><tool>`."""

    def respond(body: dict[str, Any]) -> anthropic.Reply:
        if not any(name.startswith(tool_prefix) for name in anthropic.tool_names(body)):
            return anthropic.text_reply("Ada's orders")
        done = len(anthropic.tool_results(body))
        usage = {"input_tokens": 100 * (done + 1), "output_tokens": 10 + done}
        if done >= len(CALLS):
            return anthropic.text_reply(FINAL, **usage)
        name, arguments = CALLS[done]
        return anthropic.tool_use_reply(f"{tool_prefix}{name}", arguments, **usage)

    return respond


def server_config(name: str = SERVER_NAME) -> dict[str, Any]:
    """config.yaml's `server` for the ledger server, under the given name."""
    return {"name": name, "command": sys.executable, "args": [str(LEDGER_SERVER)]}


def write_project(folder: Path, endpoints: dict[str, Any] | None = None) -> Path:
    """config.yaml (the ledger server) and tasks.yaml (the one task) in `folder`."""
    (folder / "tasks.yaml").write_text(yaml.safe_dump({"tasks": [TASK]}, sort_keys=False))
    config = {
        "server": server_config(),
        "providers": {"endpoints": endpoints or {}},
        "paths": {"tasks": "tasks.yaml", "runs": "runs", "home": "home"},
        "timeouts": {"tool_call_s": 30, "task_s": 120},
    }
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path
