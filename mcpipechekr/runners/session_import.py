"""Importing a session a user already has (an `opencode export`, a Claude Code stream-json log) as a trace.

The session was not run through the capture proxy, so its tool calls are the
agent's own record of them (opencode's text rendering of each result, Claude
Code's tool_result blocks): the trace says so with `runner: import`. The same
converters as the opencode and Claude Code runners read the file, so an
imported trace and a run trace of the same session agree step for step.

Nothing is written unless the whole file converts: a file that is not JSON, or
not a session of the named kind, is refused with what is wrong and where. The
trace goes into an existing run (`latest` by default) as the next repetition of
that task and provider, so it never replaces a trace already there. Secrets of
the config are redacted from it like from any trace.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import orjson

from mcpipechekr.artifacts.rundir import open_run
from mcpipechekr.artifacts.trace import Trace, trace_path, write_trace
from mcpipechekr.config import Config
from mcpipechekr.errors import UserError
from mcpipechekr.runners.base import RunnerOutput
from mcpipechekr.runners.claude_code import claude_session_prompt, convert_claude_stream
from mcpipechekr.runners.cliagent import SessionFormatError
from mcpipechekr.runners.opencode import convert_opencode_export, opencode_session_prompt
from mcpipechekr.tasks import Task, load_tasks

SessionKind = Literal["opencode", "claude-code"]
SESSION_KINDS: tuple[SessionKind, ...] = ("opencode", "claude-code")


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SessionFormatError("the file is not UTF-8 text") from None


def _convert_opencode(text: str, server_name: str) -> tuple[RunnerOutput, str | None, str | None]:
    try:
        export = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise SessionFormatError(f"not an opencode export: the file is not JSON ({exc})") from None
    output = convert_opencode_export(export, server_name=server_name)
    provider = None
    for message in reversed(export["messages"]):
        info = message["info"]
        if info.get("role") == "assistant" and info.get("providerID") and info.get("modelID"):
            provider = f"{info['providerID']}/{info['modelID']}"
            break
    return output, opencode_session_prompt(export), provider


def _convert_claude(text: str, server_name: str) -> tuple[RunnerOutput, str | None, str | None]:
    lines = text.splitlines()
    output = convert_claude_stream(lines, server_name=server_name)
    provider = f"anthropic/{output.model}" if output.model else None
    return output, claude_session_prompt(lines), provider


def _find_task(config: Config, task_id: str) -> Task:
    tasks = load_tasks(config.paths.tasks)
    for task in tasks.tasks:
        if task.task_id == task_id:
            return task
    known = ", ".join(task.task_id for task in tasks.tasks) or "none"
    raise UserError(f"{config.paths.tasks}: no task `{task_id}` (tasks: {known}).")


def import_session(
    config: Config,
    kind: SessionKind,
    path: str | Path,
    task_id: str,
    *,
    run: str = "latest",
    provider: str | None = None,
) -> Path:
    """Convert the session file at `path` into a trace of `task_id` in run `run`; return the trace's path.

    Raises UserError (SessionFormatError for the file itself) and writes nothing
    when the file, the task or the run is not right.
    """
    path = Path(path)
    if kind not in SESSION_KINDS:
        raise UserError(f"unknown session kind '{kind}': use one of {', '.join(SESSION_KINDS)}")
    task = _find_task(config, task_id)
    run_dir = open_run(config.paths.runs, run)
    convert = _convert_opencode if kind == "opencode" else _convert_claude
    try:
        output, prompt, found_provider = convert(_read_text(path), config.server.name)
    except SessionFormatError as exc:
        raise SessionFormatError(f"{path}: {exc.message}") from None
    label = provider or found_provider or kind
    started = output.started_at or datetime.fromtimestamp(path.stat().st_mtime, UTC)
    ended = output.ended_at if output.ended_at and output.ended_at >= started else None
    repetition = 1
    while trace_path(run_dir, task.task_id, label, repetition).exists():
        repetition += 1
    steps: list[dict[str, Any]] = [
        step.model_copy(update={"index": index}).model_dump(mode="json")
        for index, step in enumerate(output.steps)
    ]
    data = {
        "task_id": task.task_id,
        "repetition": repetition,
        "provider": label,
        "model": output.model,
        "runner": "import",
        "prompt": prompt or task.prompt,
        "started_at": started.isoformat(),
        "ended_at": ended.isoformat() if ended else None,
        "status": output.status,
        "status_reason": output.status_reason,
        "steps": steps,
        "final_answer": output.final_answer,
    }
    trace = Trace.model_validate(config.redactor.redact(data))
    return write_trace(run_dir, trace)
