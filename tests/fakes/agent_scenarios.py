"""Scripted tasks for the agent-CLI runners, shared by their tests, benchmarks and the fixture recorder.

The scripted model behaves the same whatever CLI drives it: it counts the
emails mentioning Ron Chinn up to 2012 (thinking first), then asks for the
matches with a `fields` projection, which the example server answers with its
planted `no such column: fts.rank` error, then gives a final answer. Each reply
reports distinct token counts, so a test can check each turn's usage was
carried over, not summed or shifted. Replies are chosen from the request's
content (how many tool results it carries), so a request a CLI makes besides
the task (opencode's title generation, when not suppressed) is answered too,
and recorded for the test to see.

A second, smaller scenario runs against tests/servers/capture_server.py instead
of the example, for tests of how an attempt ends: the model calls one tool once,
then answers (`openai_call_then_answer`, `anthropic_call_then_answer`,
`capture_server_config`, `ECHO_TASK`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from mcpipechekr.capture import proxy_server
from mcpipechekr.config import Config, ServerConfig, TimeoutsConfig, load_config
from mcpipechekr.providers import EndpointConfig, ProviderSpec
from mcpipechekr.runners.base import RunRequest
from mcpipechekr.tasks import Task

from . import anthropic_server as anthropic
from . import openai_server as openai

TASK_ID = "find-first-email-ron-chinn"
PROMPT = (
    "When was Ron Chinn first mentioned in my email? Give me the id, date and subject of the\n"
    "earliest email that mentions him."
)
SECRET = "sk-planted-secret-4711-zq9"
"""A fake API token in the server's environment: it must not appear in any file a runner writes."""

FIRST_ARGS = {"keywords": "Ron Chinn", "date_to": "2012-12-31"}
SECOND_ARGS = {"keywords": "Ron Chinn", "fields": ["id", "date", "subject"], "limit": 5}
THINKING = "No tool sorts by date, so I count the early years first."
FINAL = "The earliest email mentioning Ron Chinn could not be listed: the search failed (fts.rank)."
# (input, output) tokens reported for the three task requests, in order.
USAGE = [(101, 11), (202, 22), (303, 33)]


@dataclass
class ScriptLog:
    """What the scripted model was asked: task requests and the others (title generation)."""

    task_requests: list[dict[str, Any]] = field(default_factory=list)
    other_requests: list[dict[str, Any]] = field(default_factory=list)


def openai_responder(tool_prefix: str, log: ScriptLog) -> openai.Responder:
    """Chat-completions answers for a CLI that names the server's tools `<tool_prefix><tool>`."""

    def respond(body: dict[str, Any]) -> openai.Reply:
        if not body.get("tools"):
            log.other_requests.append(body)
            return openai.text_reply("Ron Chinn first email")
        log.task_requests.append(body)
        done = sum(1 for message in body.get("messages") or [] if message.get("role") == "tool")
        (prompt_tokens, completion_tokens) = USAGE[min(done, 2)]
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
        if done == 0:
            return openai.tool_call_reply(
                f"{tool_prefix}count_emails", FIRST_ARGS, reasoning=THINKING, **usage
            )
        if done == 1:
            return openai.tool_call_reply(f"{tool_prefix}query_email_database", SECOND_ARGS, **usage)
        return openai.Reply(content=FINAL, reasoning="Report the error.", **usage)

    return respond


def anthropic_responder(tool_prefix: str, log: ScriptLog) -> anthropic.Responder:
    """Messages API answers for a CLI that names the server's tools `<tool_prefix><tool>`."""

    def respond(body: dict[str, Any]) -> anthropic.Reply:
        if not any(name.startswith(tool_prefix) for name in anthropic.tool_names(body)):
            log.other_requests.append(body)
            return anthropic.text_reply("Ron Chinn first email")
        log.task_requests.append(body)
        done = len(anthropic.tool_results(body))
        (input_tokens, output_tokens) = USAGE[min(done, 2)]
        usage = {"input_tokens": input_tokens, "output_tokens": output_tokens, "cache_read_input_tokens": 7}
        if done == 0:
            return anthropic.tool_use_reply(
                f"{tool_prefix}count_emails", FIRST_ARGS, thinking=THINKING, **usage
            )
        if done == 1:
            return anthropic.tool_use_reply(
                f"{tool_prefix}query_email_database", SECOND_ARGS, text="Now the matches.", **usage
            )
        return anthropic.text_reply(FINAL, thinking="Report the error.", **usage)

    return respond


def write_config(
    folder: Path, emailindex_dir: Path, db: Path, endpoints: dict[str, Any] | None = None
) -> Config:
    """A config.yaml for the example server (with the planted secret in its env), loaded."""
    data = {
        "server": {
            "name": "emailindex",
            "command": sys.executable,
            "args": ["server.py"],
            "cwd": str(emailindex_dir),
            "env": {"EMAILINDEX_DB": str(db), "EMAILINDEX_API_TOKEN": SECRET},
        },
        "providers": {"endpoints": endpoints or {}},
        "timeouts": {"tool_call_s": 30, "task_s": 120},
    }
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_config(path)


def make_request(
    config: Config, folder: Path, provider: ProviderSpec, *, max_requests: int = 10
) -> RunRequest:
    """One attempt at the task, through the capture proxy, journaling into `folder`."""
    journal = folder / "journal.jsonl"
    workdir = folder / "work"
    workdir.mkdir(parents=True, exist_ok=True)
    return RunRequest(
        task=Task(task_id=TASK_ID, prompt=PROMPT, task_type="deterministic"),
        prompt=PROMPT,
        provider=provider,
        repetition=1,
        server=proxy_server(config.server, journal, config.server.name),
        journal=journal,
        workdir=workdir,
        config=config,
        timeout_s=config.timeouts.task_s,
        max_requests=max_requests,
    )


def files_containing(folder: Path, needle: str) -> list[Path]:
    """Every file under `folder` whose bytes contain `needle`."""
    data = needle.encode()
    return [path for path in folder.rglob("*") if path.is_file() and data in path.read_bytes()]


CAPTURE_SERVER = Path(__file__).resolve().parents[1] / "servers" / "capture_server.py"
ECHO_TASK = Task(task_id="echo", prompt="Echo 'hi' with the tool.", task_type="deterministic")
DONE = "Done."


def echo_tasks(count: int) -> list[Task]:
    """`count` tasks each answered by one `echo` call: the runner benchmarks' workload."""
    return [
        Task(task_id=f"echo-{n}", prompt=f"Echo 'hi' with the tool ({n}).", task_type="deterministic")
        for n in range(1, count + 1)
    ]


def openai_call_then_answer(tool_prefix: str, tool: str, arguments: dict[str, Any]) -> openai.Responder:
    """Chat-completions answers: call `<tool_prefix><tool>` once with `arguments`, then answer DONE."""

    def respond(body: dict[str, Any]) -> openai.Reply:
        if not any(message.get("role") == "tool" for message in body.get("messages") or []):
            return openai.tool_call_reply(f"{tool_prefix}{tool}", arguments)
        return openai.text_reply(DONE)

    return respond


def anthropic_call_then_answer(tool_prefix: str, tool: str, arguments: dict[str, Any]) -> anthropic.Responder:
    """Messages API answers: call `<tool_prefix><tool>` once with `arguments`, then answer DONE."""

    def respond(body: dict[str, Any]) -> anthropic.Reply:
        if not anthropic.tool_results(body):
            return anthropic.tool_use_reply(f"{tool_prefix}{tool}", arguments)
        return anthropic.text_reply(DONE)

    return respond


def capture_server_config(endpoints: dict[str, Any] | None = None) -> Config:
    """capture_server over stdio, named `cap`, with these provider endpoints."""
    return Config(
        server=ServerConfig(name="cap", command=sys.executable, args=[str(CAPTURE_SERVER)]),
        providers={"endpoints": {name: EndpointConfig(**spec) for name, spec in (endpoints or {}).items()}},
        timeouts=TimeoutsConfig(task_s=120),
    )
