"""Importing a session a user already has (an `opencode export`, a Claude Code stream-json log) as a trace.

The session was not run through the capture proxy, so its tool calls are the
agent's own record of them (opencode's text rendering of each result, Claude
Code's tool_result blocks): the trace says so with `runner: import`, and the
run's manifest lists it under `imports` with the client that recorded it, the
client's version when the file has it, and the source file's hash. The same
converters as the opencode and Claude Code runners read the file, so an
imported trace and a run trace of the same session agree step for step.

Tool names: the clients prefix the server's tools with their own name for the
server (`<server>_<tool>`, `mcp__<server>__<tool>`), which need not be
config.yaml's `server.name`. The names are mapped back against the tools the
server lists — the run's tools.json, or the live server's tools/list when the
run has none — by the rule in `runners/tool_names.py`: prefixes are stripped
whatever they are, the client's own tools (and another MCP server's) stay as
calls that never reached the server, and a name of the server that it does not
list stops the import.

Nothing is written unless the whole file converts and every tool name maps: a
file that is not JSON, or not a session of the named kind, or that calls a tool
the server does not list, is refused with what is wrong and where. The trace
goes into a run as the next repetition of that task and provider, so it never
replaces a trace already there: the latest run by default, a new run when there
is none yet or `new_run` asks for one (with a manifest and the tools.json the
names were mapped against). Secrets of the config are redacted from it like
from any trace.

This module sits above `steps/`, not in `runners/`, whose converters it
reuses: making a run (its manifest and tools.json) is the harness's business,
done as the steps do it, and the runners know nothing of runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from mcpipechekr._util.hashing import sha256_file
from mcpipechekr.artifacts import (
    ImportedSession,
    RunDir,
    ToolsSnapshot,
    create_run_dir,
    list_runs,
    read_model,
    utc_now,
    write_model,
)
from mcpipechekr.artifacts.rundir import LATEST, open_run
from mcpipechekr.artifacts.runstate import load_manifest
from mcpipechekr.artifacts.trace import ToolCall, Trace, trace_path, write_trace
from mcpipechekr.config import Config
from mcpipechekr.errors import UserError
from mcpipechekr.runners.base import RunnerOutput
from mcpipechekr.runners.claude_code import (
    claude_client_version,
    claude_session_prompt,
    convert_claude_stream,
)
from mcpipechekr.runners.cliagent import SessionFormatError
from mcpipechekr.runners.opencode_export import (
    convert_opencode_export,
    opencode_client_version,
    opencode_session_prompt,
)
from mcpipechekr.runners.tool_names import CLAUDE_MCP_PREFIX, SessionClient, ToolNameMapping, map_tool_names
from mcpipechekr.runplan import new_manifest
from mcpipechekr.server.lifecycle import server_under_test
from mcpipechekr.server.workspace import prepare_repo
from mcpipechekr.steps.snapshot import server_tools
from mcpipechekr.tasks import Task, load_tasks

SessionKind = SessionClient
SESSION_KINDS: tuple[SessionKind, ...] = ("opencode", "claude-code")


@dataclass(frozen=True)
class RecordedSession:
    """A session file read and converted, tool names as the client gave them."""

    output: RunnerOutput
    prompt: str | None
    provider: str | None
    client_version: str | None


@dataclass(frozen=True)
class ImportedTrace:
    """What `import_session` wrote, for the command to report."""

    path: Path
    """The trace file."""
    run_dir: RunDir
    created_run: bool
    """True when the run was made for this import."""
    mapping: ToolNameMapping
    """How the session's tool names were mapped (`kept` are the calls not to the server's tools)."""


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SessionFormatError("the file is not UTF-8 text") from None


def _read_opencode(text: str) -> RecordedSession:
    try:
        export = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise SessionFormatError(f"not an opencode export: the file is not JSON ({exc})") from None
    output = convert_opencode_export(export, server_name=None)  # names are mapped against the tool list
    provider = None
    for message in reversed(export["messages"]):
        info = message["info"]
        if info.get("role") == "assistant" and info.get("providerID") and info.get("modelID"):
            provider = f"{info['providerID']}/{info['modelID']}"
            break
    return RecordedSession(output, opencode_session_prompt(export), provider, opencode_client_version(export))


def _read_claude(text: str) -> RecordedSession:
    lines = text.splitlines()
    output = convert_claude_stream(lines, server_name=None, keep_tool_names=True)
    provider = f"anthropic/{output.model}" if output.model else None
    return RecordedSession(output, claude_session_prompt(lines), provider, claude_client_version(lines))


def read_session(kind: SessionKind, path: Path) -> RecordedSession:
    """Read and convert a session file; SessionFormatError (naming the file) when it is not one."""
    read = _read_opencode if kind == "opencode" else _read_claude
    try:
        return read(_read_text(path))
    except SessionFormatError as exc:
        raise SessionFormatError(f"{path}: {exc.message}") from None


def _find_task(config: Config, task_id: str) -> Task:
    tasks = load_tasks(config.paths.tasks)
    for task in tasks.tasks:
        if task.task_id == task_id:
            return task
    known = ", ".join(task.task_id for task in tasks.tasks) or "none"
    raise UserError(f"{config.paths.tasks}: no task `{task_id}` (tasks: {known}).")


def _target_run(config: Config, run: str | None, new_run: bool) -> RunDir | None:
    """The existing run to import into, or None for a new one."""
    if new_run:
        if run is not None:
            raise UserError(
                f"--run {run} and --new-run contradict each other: name a run, or ask for a new one."
            )
        return None
    runs = list_runs(config.paths.runs)
    if run is None:
        return runs[-1] if runs else None
    if run == LATEST and not runs:
        raise UserError(
            f"{config.paths.runs}: there are no runs yet, so there is no `{LATEST}` run; "
            "leave out --run to import into a new run."
        )
    return open_run(config.paths.runs, run)


def server_tool_list(config: Config, run_dir: RunDir | None) -> tuple[ToolsSnapshot, str]:
    """The tools the names are mapped against, and where they came from.

    The run's tools.json when it has one (what the run was judged against);
    else the live server's tools/list, started and health-checked as for a run.
    """
    if run_dir is not None and run_dir.tools.exists():
        return read_model(run_dir.tools, ToolsSnapshot), str(run_dir.tools)
    prepare_repo(config.server)
    with server_under_test(config) as server:
        assert server.health is not None
        tools = server_tools(config, server, server.health)
    return tools, f"the running server '{config.server.name}'"


def _session_server_name(namespace: str) -> str:
    """`mcp__shelf__` -> `shelf`, `shelf_` -> `shelf`: the client's name for a server, from a prefix."""
    if namespace.startswith(CLAUDE_MCP_PREFIX):
        namespace = namespace[len(CLAUDE_MCP_PREFIX) :]
    return namespace.rstrip("_")


def check_mapping(path: Path, mapping: ToolNameMapping, tools: ToolsSnapshot, source: str) -> None:
    """Refuse the import when a tool name is the server's but not listed, or the server is unclear."""
    listed = ", ".join(tool.name for tool in tools.tools) or "no tools"
    if mapping.conflicting:
        names = ", ".join(f"`{_session_server_name(namespace)}`" for namespace in mapping.namespaces)
        raise UserError(
            f"{path}: the session calls tools of the server under different server names ({names}), "
            f"so which one was the server under test is unclear. Set server.name in config.yaml to the "
            "session's name for it. Nothing was written."
        )
    if mapping.unknown:
        unknown = ", ".join(f"`{name}`" for name in mapping.unknown)
        raise UserError(
            f"{path}: the session calls {len(mapping.unknown)} tool(s) the server does not list: "
            f"{unknown}. A session's tool name is the server's tool name behind the client's prefix "
            f"(`<server>_`, `mcp__<server>__`); the tools listed by {source} are: {listed}. Import the "
            "session against the server (and version) it used, set in config.yaml. Nothing was written."
        )


def _mapped_output(output: RunnerOutput, mapping: ToolNameMapping) -> tuple[list[dict[str, Any]], str | None]:
    """The steps with the server's tool names, numbered, and a note on the calls not to the server."""
    steps: list[dict[str, Any]] = []
    others: list[str] = []
    for index, step in enumerate(output.steps):
        update: dict[str, Any] = {"index": index}
        if isinstance(step, ToolCall):
            if step.tool in mapping.tools:
                update["tool"] = mapping.tools[step.tool]
            else:
                others.append(step.tool)
        steps.append(step.model_copy(update=update).model_dump(mode="json"))
    note = (
        f"{len(others)} tool call(s) of the session were not to the server's tools (the client's own or "
        f"another server's): {', '.join(others)}"
        if others
        else None
    )
    return steps, note


def import_session(
    config: Config,
    kind: SessionKind,
    path: str | Path,
    task_id: str,
    *,
    run: str | None = None,
    new_run: bool = False,
    model_label: str | None = None,
) -> ImportedTrace:
    """Convert the session file at `path` into a trace of `task_id`; return what was written.

    `run`: a run id or `latest`; None means the latest run, or a new run when
    there is none. `new_run`: always a new run. `model_label` names the model
    that ran the session in the trace and manifest (default: the session's own
    record, e.g. openai/gpt-4o); it is a label, never a provider to call. Raises UserError
    (SessionFormatError for the file itself) and writes nothing when the file,
    its tool names, the task or the run is not right.
    """
    path = Path(path)
    if kind not in SESSION_KINDS:
        raise UserError(f"unknown session kind '{kind}': use one of {', '.join(SESSION_KINDS)}")
    task = _find_task(config, task_id)
    target = _target_run(config, run, new_run)
    session = read_session(kind, path)
    tools, source = server_tool_list(config, target)
    calls = [step.tool for step in session.output.steps if isinstance(step, ToolCall)]
    mapping = map_tool_names(
        calls, [tool.name for tool in tools.tools], client=kind, server_name=config.server.name
    )
    check_mapping(path, mapping, tools, source)

    output = session.output
    label = model_label or session.provider or kind
    started = output.started_at or datetime.fromtimestamp(path.stat().st_mtime, UTC)
    ended = output.ended_at if output.ended_at and output.ended_at >= started else None
    repetition = 1
    while target is not None and trace_path(target, task.task_id, label, repetition).exists():
        repetition += 1
    steps, note = _mapped_output(output, mapping)
    data = {
        "task_id": task.task_id,
        "repetition": repetition,
        "provider": label,
        "model": output.model,
        "runner": "import",
        "prompt": session.prompt or task.prompt,
        "started_at": started.isoformat(),
        "ended_at": ended.isoformat() if ended else None,
        "status": output.status,
        "status_reason": "; ".join(part for part in (output.status_reason, note) if part) or None,
        "steps": steps,
        "final_answer": output.final_answer,
    }
    trace = Trace.model_validate(config.redactor.redact(data))
    record = {
        "task_id": task.task_id,
        "runner": kind,
        "client_version": session.client_version,
        "source_name": path.name,
        "source_hash": sha256_file(path),
    }

    created = target is None
    run_dir = target if target is not None else _new_import_run(config, task, label, tools)
    written = write_trace(run_dir, trace)
    _record_import(run_dir, ImportedSession(trace=written.name, imported_at=utc_now(), **record))
    return ImportedTrace(written, run_dir, created, mapping)


def _new_import_run(config: Config, task: Task, model_label: str, tools: ToolsSnapshot) -> RunDir:
    """A run folder for imported traces: its manifest (ended, nothing left to run) and its tools.json."""
    run_dir = create_run_dir(config.paths.runs)
    manifest = new_manifest(config, run_dir.run_id, [task])
    providers = manifest.providers.model_copy(update={"phase1": model_label})
    write_model(run_dir.manifest, manifest.model_copy(update={"providers": providers}).finished("completed"))
    write_model(run_dir.tools, tools)
    return run_dir


def _record_import(run_dir: RunDir, entry: ImportedSession) -> None:
    """Add the import to the run's manifest; a run without one (made by hand) has nowhere to say it."""
    if not run_dir.manifest.exists():
        return
    manifest = load_manifest(run_dir)
    write_model(run_dir.manifest, manifest.model_copy(update={"imports": [*manifest.imports, entry]}))
