"""The corpus's scripted model: sessions.yaml as answers of the OpenAI and Anthropic fakes.

One responder serves every task: it finds the task by its prompt in the
request's user text, counts the tool results the request already carries, and
answers with the next scripted call (the client's prefix added to the tool
name) or, after the last, with the final answer. Requests besides the task (a
client's title generation) get a short text. Usage is reported per turn from
the turn's position, the same for every client, so token costs compare.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
for entry in (ROOT, ROOT / "tests"):
    if str(entry) not in sys.path:
        sys.path.insert(0, str(entry))

from fakes import anthropic_server as anthropic  # noqa: E402
from fakes import openai_server as openai  # noqa: E402

CORPUS = Path(__file__).resolve().parent / "roomdesk"
SERVER = CORPUS / "server.py"
TASKS = CORPUS / "tasks.yaml"
SESSIONS = CORPUS / "sessions.yaml"
LABELS = CORPUS / "labels.yaml"
RECORDED = CORPUS / "recorded"
SERVER_NAME = "roomdesk"


@dataclass(frozen=True)
class Session:
    """One task's script: the calls in order and the final answer."""

    task_id: str
    prompt: str
    calls: list[tuple[str, dict[str, Any]]]
    final: str


def load_sessions() -> dict[str, Session]:
    """sessions.yaml joined with the prompts of tasks.yaml, by task id."""
    prompts = {task["task_id"]: task["prompt"] for task in yaml.safe_load(TASKS.read_text())["tasks"]}
    scripts = yaml.safe_load(SESSIONS.read_text())["sessions"]
    return {
        task_id: Session(
            task_id,
            prompts[task_id],
            [(name, dict(arguments or {})) for name, arguments in spec["calls"]],
            spec["final"].strip(),
        )
        for task_id, spec in scripts.items()
    }


def _texts(content: Any) -> str:
    if isinstance(content, str):
        return content
    return " ".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


def _which(sessions: dict[str, Session], text: str) -> Session | None:
    for session in sessions.values():
        if session.prompt in text:
            return session
    return None


def openai_responder(tool_prefix: str, sessions: dict[str, Session] | None = None) -> openai.Responder:
    """Chat-completions answers for a client naming the server's tools `<tool_prefix><tool>`."""
    sessions = sessions or load_sessions()

    def respond(body: dict[str, Any]) -> openai.Reply:
        messages = body.get("messages") or []
        user = " ".join(_texts(m.get("content")) for m in messages if m.get("role") == "user")
        session = _which(sessions, " ".join(user.split()))
        if not body.get("tools") or session is None:
            return openai.text_reply("Room calendar question")
        done = sum(1 for message in messages if message.get("role") == "tool")
        usage = {"prompt_tokens": 200 * (done + 1), "completion_tokens": 20 + done}
        if done >= len(session.calls):
            return openai.Reply(content=session.final, **usage)
        name, arguments = session.calls[done]
        return openai.tool_call_reply(f"{tool_prefix}{name}", arguments, **usage)

    return respond


def anthropic_responder(tool_prefix: str, sessions: dict[str, Session] | None = None) -> anthropic.Responder:
    """Messages API answers for a client naming the server's tools `<tool_prefix><tool>`."""
    sessions = sessions or load_sessions()

    def respond(body: dict[str, Any]) -> anthropic.Reply:
        messages = body.get("messages") or []
        user = " ".join(_texts(m.get("content")) for m in messages if m.get("role") == "user")
        session = _which(sessions, " ".join(user.split()))
        if session is None or not any(name.startswith(tool_prefix) for name in anthropic.tool_names(body)):
            return anthropic.text_reply("Room calendar question")
        done = len(anthropic.tool_results(body))
        usage = {"input_tokens": 200 * (done + 1), "output_tokens": 20 + done}
        if done >= len(session.calls):
            return anthropic.text_reply(session.final, **usage)
        name, arguments = session.calls[done]
        return anthropic.tool_use_reply(f"{tool_prefix}{name}", arguments, **usage)

    return respond


def server_config(name: str = SERVER_NAME) -> dict[str, Any]:
    """config.yaml's `server` for the corpus server."""
    return {"name": name, "command": sys.executable, "args": [str(SERVER)]}


def write_project(folder: Path, endpoints: dict[str, Any] | None = None) -> Path:
    """A config.yaml in `folder` for the corpus server and tasks (runs under `folder`); its path."""
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "server": server_config(),
        "providers": {"phase0": "demo", "phase1": "demo", "phase2": "demo", "endpoints": endpoints or {}},
        "paths": {"tasks": str(TASKS), "runs": str(folder / "runs"), "home": str(folder / "home")},
        "timeouts": {"tool_call_s": 30, "task_s": 120},
    }
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path
