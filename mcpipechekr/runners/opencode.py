"""The opencode runner: `opencode run` drives the task, `opencode export` tells us what it did.

Two modes (`--opencode-mode`): `run`, described here, starts an `opencode run`
per attempt; `serve`, Phase 1's default, keeps one `opencode serve` for all
the runner's attempts and drives each over its HTTP API (`_run_served`, with
the process itself in opencode_serve.py); both write the same config and
convert the session with `convert_opencode_export`.

How one attempt runs in `run` mode:

1. A per-run opencode config is written into the attempt's scratch folder and
   passed with `OPENCODE_CONFIG`, so the user's own opencode files (and their
   stored credentials) are read as usual and never edited. It declares the
   server under test (the capture proxy's command, or its URL) under `mcp`,
   the model's provider when it is an OpenAI-compatible endpoint from
   config.yaml (`{"npm": "@ai-sdk/openai-compatible", ...}`; opencode ships
   that package, nothing is downloaded), the step limit (`max_requests`), and
   permissions: by default every tool is denied except the server's, which
   removes opencode's built-in tools (bash, read, edit, ...) from what the
   model sees; `keep_builtin_tools=True` allows them all instead. Secrets (API
   keys, header values) are referenced as `{env:NAME}` and passed in the
   process environment, never written into the file; a provider key kept in
   the `.env` beside config.yaml is passed the same way (`Config.provider_env`),
   and withheld from the server by the capture proxy. The server's own
   environment reaches it the same way (opencode hands its environment to the
   MCP servers it launches).
2. `opencode run --format json --thinking -m provider/model --title … --dir …`
   runs in an empty folder (also as `$PWD`, which opencode prefers to its
   working directory) with the prompt on stdin (given as an argument, opencode
   would quote words of it). The title is set so opencode makes no extra
   title-generation request to the model.
3. The session id is read from the JSON event stream, and `opencode export
   <session>` gives the whole session, which `convert_opencode_export` turns
   into the runner's output. If the export fails, or the attempt timed out
   (no time is left for a second process), the event stream itself, which
   carries the same parts, is converted instead.

The conversion: each step (`step-start` … `step-finish`) of an assistant
message is one model turn — its text parts, its reasoning parts as thinking,
and the tokens its `step-finish` reports (input excludes cached tokens, which
are counted apart; output includes reasoning tokens) — followed by the tool
calls it made. opencode names MCP tools `<server>_<tool>`; those of our server
are mapped back to the tool's name; calls to other tools (opencode's built-ins,
when kept) stay as opencode named them, and the assembler keeps them as calls
that never reached the server.
Tool results here are opencode's text rendering of them: the text blocks of a
result joined with blank lines, split back into blocks (`split_joined_text`);
an output opencode truncated (`metadata.truncated`) is kept as the truncated text
the model read, with the whole result's size beside it. When the trace is
assembled the capture journal's exact result replaces the text, except where the
model was shown a preview (`assemble.py`).

Shutdown: as it exits, opencode stops the server behind the capture proxy
itself (SIGTERM to the proxy's children, then it closes the proxy's stdin).
The proxy tells that from a crash (`capture/stdio_proxy.py`), so a completed
attempt does not halt the run.
"""

from __future__ import annotations

import os
import re
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import anyio
import orjson

from mcpipechekr._util.tokens import BYTES_PER_TOKEN
from mcpipechekr.artifacts._base import utc_now
from mcpipechekr.artifacts.atomic import atomic_write_json
from mcpipechekr.artifacts.tool_result import split_joined_text
from mcpipechekr.artifacts.trace import ModelTurn, ToolCall, Usage, tool_call_from_result
from mcpipechekr.errors import UserError
from mcpipechekr.runners.base import AgentServer, RunnerName, RunnerOutput, RunRequest, TraceStatus
from mcpipechekr.runners.cliagent import CliAgentRunner, SecretEnv, SessionFormatError, find_cli, run_cli
from mcpipechekr.runners.opencode_serve import OpencodeServe, OpencodeServerDown
from mcpipechekr.runners.registry import OPENCODE_MODES, OpencodeMode

OPENCODE_ENV_VAR = "MCPIPECHEKR_OPENCODE"
INSTALL_HINT = "npm install -g opencode-ai"
EXPORT_TIMEOUT_S = 60.0
MIN_EXPORT_S = 2.0
_UNSAFE_NAME = re.compile(r"[^a-zA-Z0-9_-]")

# Keep the agent blind and the run offline-safe; none of these touch the user's credentials.
QUIET_ENV = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_PROJECT_CONFIG": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    "OPENCODE_EXPERIMENTAL_DISABLE_FILEWATCHER": "1",
}


def opencode_server_key(server_name: str) -> str:
    """The name opencode gives an MCP server in tool names (`my.server` -> `my_server`)."""
    return _UNSAFE_NAME.sub("_", server_name)


def opencode_model(request: RunRequest) -> str:
    """The `-m provider/model` argument for the request's provider."""
    spec = request.provider
    if spec.model is None:
        raise SessionFormatError(
            f"provider '{spec}' names no model; the opencode runner needs provider/model"
        )
    return f"{spec.provider}/{spec.model}"


def build_opencode_config(
    request: RunRequest, secrets: SecretEnv, *, keep_builtin_tools: bool = False
) -> dict[str, Any]:
    """The per-run opencode config for one attempt (secrets referenced as `{env:NAME}`)."""
    key = opencode_server_key(request.server.name)
    tool_timeout_ms = int(request.config.timeouts.tool_call_s * 1000)
    config: dict[str, Any] = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "snapshot": False,  # no git snapshots of the (empty) project folder
        "mcp": {key: _mcp_entry(request.server, secrets, tool_timeout_ms)},
        "permission": {"*": "allow"} if keep_builtin_tools else {"*": "deny", f"{key}_*": "allow"},
        "agent": {"build": {"steps": request.max_requests}},
    }
    endpoint = request.config.providers.endpoint_for(request.provider)
    if endpoint is not None and request.provider.model is not None:
        options: dict[str, Any] = {"baseURL": endpoint.base_url}
        if endpoint.api_key_env:
            options["apiKey"] = "{env:" + endpoint.api_key_env + "}"
        config["provider"] = {
            request.provider.provider: {
                "npm": "@ai-sdk/openai-compatible",
                "name": request.provider.provider,
                "options": options,
                "models": {request.provider.model: {"name": request.provider.model}},
            }
        }
    return config


def _local_entry(server: AgentServer, timeout_ms: int) -> dict[str, Any]:
    """A stdio server's MCP entry, the same in the config file and over `POST /mcp`."""
    entry: dict[str, Any] = {
        "type": "local",
        "command": [server.command, *server.args],
        "enabled": True,
        "timeout": timeout_ms,
    }
    if server.cwd:
        entry["cwd"] = server.cwd
    return entry


def _mcp_entry(server: AgentServer, secrets: SecretEnv, timeout_ms: int) -> dict[str, Any]:
    if server.transport == "stdio":
        return _local_entry(server, timeout_ms)
    return {
        "type": "remote",
        "url": server.url,
        "enabled": True,
        "timeout": timeout_ms,
        "headers": {name: "{env:" + secrets.name_for(value) + "}" for name, value in server.headers.items()},
    }


class OpencodeRunner(CliAgentRunner):
    """Runs one task attempt with the opencode CLI (see the module docstring).

    `mode` "run" (the default here) starts `opencode run` for each attempt;
    "serve" keeps one `opencode serve` for all the runner's attempts (see
    `opencode_serve.py`) until `aclose`. Phase 1 passes `--opencode-mode`,
    whose default is "serve". A serving runner may be kept across Phase 1
    calls of one process (`kept.py`: doit's trace targets), also from several
    threads' event loops at once.
    """

    name: ClassVar[RunnerName] = "opencode"

    def __init__(
        self,
        *,
        binary: str | None = None,
        keep_builtin_tools: bool = False,
        env: dict[str, str] | None = None,
        mode: OpencodeMode = "run",
    ):
        super().__init__(binary=binary, keep_builtin_tools=keep_builtin_tools, env=env)
        if mode not in OPENCODE_MODES:
            raise UserError(f"unknown opencode mode '{mode}': use one of {', '.join(OPENCODE_MODES)}")
        self.mode = mode
        self._serve: OpencodeServe | None = None
        self._serve_lock = threading.Lock()

    @property
    def kept_across_calls(self) -> bool:
        """Worth keeping for the next Phase 1 call in this process: its server is started once."""
        return self.mode == "serve"

    def _env(
        self, request: RunRequest, secrets: SecretEnv, *, with_server_env: bool = True
    ) -> dict[str, str]:
        return {
            **os.environ,
            **request.config.provider_env(),  # keys kept in .env, which os.environ does not hold
            **self.env,
            **(request.server.env if with_server_env else {}),
            **QUIET_ENV,
            **secrets.values,
        }

    async def run(self, request: RunRequest) -> RunnerOutput:
        binary = self.binary or find_cli("opencode", OPENCODE_ENV_VAR, INSTALL_HINT)
        if self.mode == "serve":
            return await self._run_served(binary, request)
        started = utc_now()
        deadline = time.monotonic() + request.timeout_s
        workdir = request.workdir
        project = workdir / "opencode-project"  # empty: nothing for the agent to read
        project.mkdir(parents=True, exist_ok=True)
        secrets = SecretEnv("MCPIPECHEKR_SECRET_")
        config = build_opencode_config(request, secrets, keep_builtin_tools=self.keep_builtin_tools)
        # Not named opencode.json: opencode would also read it as a project config of the folder below.
        config_path = atomic_write_json(workdir / "mcpipechekr-opencode.json", config)
        env = {
            **self._env(request, secrets),
            "OPENCODE_CONFIG": str(config_path),
            "PWD": str(project),  # opencode takes its project folder from $PWD, not the process's cwd
        }
        title = f"{request.task.task_id} r{request.repetition}"
        model = opencode_model(request)
        argv = [
            binary,
            "run",
            "--format",
            "json",
            "--thinking",
            "-m",
            model,
            "--title",
            title,
            "--dir",
            str(project),
        ]
        result = await run_cli(
            argv, env=env, cwd=project, stdin_text=request.prompt, timeout_s=request.timeout_s
        )
        redact = request.config.redactor.redact
        (workdir / "opencode-events.jsonl").write_text(redact("\n".join(result.stdout_lines)) + "\n")
        events = parse_event_lines(result.stdout_lines)
        session_id = session_id_from_events(events)
        if session_id is None:
            reason = "timed out" if result.timed_out else f"exited with code {result.returncode}"
            return RunnerOutput(
                status="timeout" if result.timed_out else "error",
                status_reason=redact(f"opencode {reason} before starting a session: {result.stderr_tail}"),
                started_at=started,
                ended_at=utc_now(),
            )
        # The export is a second opencode process; within the task's time only (a timed-out attempt is
        # converted from its event stream at once, so the trace is written before the run's deadline).
        remaining = deadline - time.monotonic()
        export = None
        if not result.timed_out and remaining > MIN_EXPORT_S:
            export = await _export(
                binary, session_id, env=env, cwd=project, timeout_s=min(EXPORT_TIMEOUT_S, remaining)
            )
        if export is None:
            export = export_from_events(events, session_id)
        else:
            atomic_write_json(workdir / "opencode-export.json", redact(export))
        output = convert_opencode_export(
            export, server_name=request.server.name, max_requests=request.max_requests
        )
        output.started_at, output.ended_at = started, utc_now()
        errors = [event for event in events if event.get("type") == "error"]
        if result.timed_out:
            output.status = "timeout"
            output.status_reason = f"no final answer within the task's {request.timeout_s:g} s"
        elif errors and output.status != "error":
            output.status, output.status_reason = "error", _event_error(errors[-1])
        elif result.returncode not in (0, None) and output.status == "completed":
            output.status = "error"
            output.status_reason = f"opencode exited with code {result.returncode}: {result.stderr_tail}"
        if output.status_reason:
            output.status_reason = redact(output.status_reason)
        return output

    async def _run_served(self, binary: str, request: RunRequest) -> RunnerOutput:
        """One attempt on the run's `opencode serve` (see opencode_serve.py)."""
        started = utc_now()
        deadline = time.monotonic() + request.timeout_s
        redact = request.config.redactor.redact
        with self._serve_lock:
            if self._serve is None:
                secrets = SecretEnv("MCPIPECHEKR_SECRET_")
                config = build_opencode_config(request, secrets, keep_builtin_tools=self.keep_builtin_tools)
                del config["mcp"]  # each attempt adds its own, with its own journal
                env = self._env(request, secrets, with_server_env=False)
                self._serve = OpencodeServe(binary, env, config)
            serve = self._serve
        try:
            process = await serve.ensure()
        except OpencodeServerDown as exc:
            return RunnerOutput(
                status="error", status_reason=redact(exc.reason), started_at=started, ended_at=utc_now()
            )
        project = serve.take_folder()  # an instance of the server no other attempt is using now
        key = opencode_server_key(request.server.name)
        timeout_ms = int(request.config.timeouts.tool_call_s * 1000)
        model = opencode_model(request)
        provider_id, model_id = model.split("/", 1)
        session_id: str | None = None
        timed_out = False
        down: str | None = None
        clean = False  # the session ended on its own and was read back: its folder may serve again
        try:
            await serve.call(
                process,
                "POST",
                "/mcp",
                directory=project,
                body={"name": key, "config": _served_mcp_entry(request.server, timeout_ms)},
            )
            session = await serve.call(
                process,
                "POST",
                "/session",
                directory=project,
                body={"title": f"{request.task.task_id} r{request.repetition}"},
            )
            session_id = str(session["id"])
            prompt = {
                "parts": [{"type": "text", "text": request.prompt}],
                "model": {"providerID": provider_id, "modelID": model_id},
            }
            async with anyio.create_task_group() as group:

                async def watch() -> None:
                    nonlocal down
                    down = await serve.watch(process)
                    group.cancel_scope.cancel()

                async def ask() -> None:
                    nonlocal timed_out, down
                    remaining = max(0.1, deadline - time.monotonic())
                    with anyio.move_on_after(remaining) as scope:
                        try:
                            await serve.call(
                                process,
                                "POST",
                                f"/session/{session_id}/message",
                                directory=project,
                                body=prompt,
                                timeout_s=remaining + 5,
                            )
                        except OpencodeServerDown as exc:
                            down = exc.reason
                    timed_out = scope.cancelled_caught
                    group.cancel_scope.cancel()

                group.start_soon(watch)
                group.start_soon(ask)
            if down is None and timed_out:  # stop the agent; what it did so far is read below
                await serve.stop_session(process, project, session_id)
            export = None
            if down is None:
                info = await serve.call(process, "GET", f"/session/{session_id}", directory=project)
                messages = await serve.call(
                    process, "GET", f"/session/{session_id}/message", directory=project
                )
                export = {"info": info, "messages": messages}
                clean = not timed_out
        except OpencodeServerDown as exc:
            down, export = exc.reason, None
        finally:
            with anyio.CancelScope(shield=True):
                await serve.release_folder(process, project, key, reuse=clean)
        if down is not None:
            process.down = process.down or down
            return RunnerOutput(
                status="incomplete",
                status_reason=redact(f"{down}; it is started again for the next attempts"),
                started_at=started,
                ended_at=utc_now(),
            )
        assert export is not None
        atomic_write_json(request.workdir / "opencode-export.json", redact(export))
        output = convert_opencode_export(
            export, server_name=request.server.name, max_requests=request.max_requests
        )
        output.started_at, output.ended_at = started, utc_now()
        if timed_out:
            output.status = "timeout"
            output.status_reason = f"no final answer within the task's {request.timeout_s:g} s"
        if output.status_reason:
            output.status_reason = redact(output.status_reason)
        return output

    async def arelease(self) -> None:
        """Let go of what belongs to the calling event loop (its HTTP client); the server keeps running."""
        if self._serve is not None:
            await self._serve.release_client()

    async def aclose(self) -> None:
        """Stop the run's `opencode serve`, if one was started."""
        with self._serve_lock:
            serve, self._serve = self._serve, None
        if serve is not None:
            await serve.aclose()


def _served_mcp_entry(server: AgentServer, timeout_ms: int) -> dict[str, Any]:
    """The server's MCP entry for `POST /mcp`: as in the config file, but with values, not `{env:NAME}`
    references (an entry added at run time is not read as a file; it goes over loopback, is never written)."""
    if server.transport == "stdio":
        entry = _local_entry(server, timeout_ms)
        if server.env:
            entry["environment"] = dict(server.env)
        return entry
    entry = {"type": "remote", "url": server.url, "enabled": True, "timeout": timeout_ms}
    if server.headers:
        entry["headers"] = dict(server.headers)
    return entry


async def _export(
    binary: str, session_id: str, *, env: dict[str, str], cwd: Path, timeout_s: float
) -> dict[str, Any] | None:
    """The session as `opencode export` prints it; None when it fails.

    Written to a file, not read from a pipe: opencode loses what a pipe has not
    taken when it exits, so an export over 64 KiB came back cut.
    """
    target = cwd.parent / "opencode-export.raw.json"
    result = await run_cli(
        [binary, "export", session_id],
        env=env,
        cwd=cwd,
        stdin_text=None,
        timeout_s=timeout_s,
        stdout_file=target,
    )
    text = target.read_text(encoding="utf-8", errors="replace") if target.exists() else ""
    target.unlink(missing_ok=True)
    start = text.find("{")
    if result.returncode != 0 or start < 0:
        return None
    try:
        data = orjson.loads(text[start:])
    except orjson.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def parse_event_lines(lines: list[str]) -> list[dict[str, Any]]:
    """The JSON events of `opencode run --format json` (other lines are skipped)."""
    events = []
    for line in lines:
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def session_id_from_events(events: list[dict[str, Any]]) -> str | None:
    """The session id the event stream names first."""
    for event in events:
        session = event.get("sessionID") or (event.get("part") or {}).get("sessionID")
        if isinstance(session, str) and session:
            return session
    return None


def export_from_events(events: list[dict[str, Any]], session_id: str) -> dict[str, Any]:
    """An export-shaped session built from the event stream's parts, grouped by message."""
    messages: dict[str, dict[str, Any]] = {}
    for event in events:
        part = event.get("part")
        if not isinstance(part, dict) or "type" not in part:
            continue
        message_id = str(part.get("messageID") or "unknown")
        message = messages.setdefault(
            message_id, {"info": {"id": message_id, "role": "assistant"}, "parts": []}
        )
        message["parts"].append(part)
        if part["type"] == "step-finish" and part.get("reason"):
            message["info"]["finish"] = part["reason"]
    return {"info": {"id": session_id}, "messages": list(messages.values())}


def _event_error(event: dict[str, Any]) -> str:
    error = event.get("error") or {}
    if isinstance(error, dict):
        data = error.get("data") or {}
        message = data.get("message") if isinstance(data, dict) else None
        return f"opencode reported {error.get('name') or 'an error'}: {message or data or error}"
    return f"opencode reported an error: {error}"


# --- conversion ------------------------------------------------------------------------------------


def _ms_to_datetime(value: Any) -> datetime | None:
    if isinstance(value, int | float) and value > 0:
        return datetime.fromtimestamp(value / 1000, UTC)
    return None


def _require(condition: bool, where: str, problem: str) -> None:
    if not condition:
        raise SessionFormatError(f"not an opencode export: {where}: {problem}")


def validate_opencode_export(export: Any) -> None:
    """Raise SessionFormatError naming the first place where `export` is not an `opencode export` session."""
    _require(isinstance(export, dict), "top level", "expected a JSON object with `info` and `messages`")
    _require(isinstance(export.get("info"), dict), "info", "missing or not an object")
    _require(isinstance(export["info"].get("id"), str), "info.id", "missing session id")
    messages = export.get("messages")
    _require(isinstance(messages, list), "messages", "missing or not a list")
    for number, message in enumerate(messages):
        where = f"messages[{number}]"
        _require(isinstance(message, dict), where, "not an object")
        info, parts = message.get("info"), message.get("parts")
        _require(isinstance(info, dict) and isinstance(info.get("role"), str), f"{where}.info", "no `role`")
        _require(isinstance(parts, list), f"{where}.parts", "missing or not a list")
        for index, part in enumerate(parts):
            at = f"{where}.parts[{index}]"
            _require(isinstance(part, dict) and isinstance(part.get("type"), str), at, "no `type`")
            if part["type"] == "tool":
                _require(isinstance(part.get("tool"), str), at, "tool part without `tool` name")
                _require(isinstance(part.get("state"), dict), at, "tool part without `state`")
                _require(
                    isinstance(part["state"].get("input", {}), dict), f"{at}.state.input", "not an object"
                )


def opencode_session_prompt(export: dict[str, Any]) -> str | None:
    """The text of the session's first user message: the prompt the agent was given."""
    for message in export.get("messages") or []:
        if (message.get("info") or {}).get("role") == "user":
            texts = [
                part.get("text", "")
                for part in message.get("parts") or []
                if part.get("type") == "text" and not part.get("synthetic")
            ]
            return "".join(texts) or None
    return None


def opencode_client_version(export: dict[str, Any]) -> str | None:
    """The opencode version that recorded an export (`info.version`), if it says."""
    version = (export.get("info") or {}).get("version")
    return version if isinstance(version, str) and version else None


def _usage(tokens: Any, completion: Any) -> Usage:
    if not isinstance(tokens, dict):
        return Usage.estimated("", completion)
    cache = tokens.get("cache") or {}
    return Usage(
        input_tokens=int(tokens.get("input") or 0),
        output_tokens=int(tokens.get("output") or 0) + int(tokens.get("reasoning") or 0),
        cache_read_tokens=int(cache.get("read") or 0),
        cache_write_tokens=int(cache.get("write") or 0),
        source="reported",
    )


class _Turn:
    def __init__(self) -> None:
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.calls: list[dict[str, Any]] = []
        self.tokens: Any = None

    @property
    def empty(self) -> bool:
        return not (self.text or self.thinking or self.calls or self.tokens)


def _tool_call(part: dict[str, Any], tool: str, index: int) -> ToolCall:
    state = part["state"]
    status = state.get("status")
    timing = state.get("time") or {}
    start, end = timing.get("start"), timing.get("end")
    latency = float(end - start) if isinstance(start, int | float) and isinstance(end, int | float) else 0.0
    output = state.get("output")
    text = output if isinstance(output, str) else orjson.dumps(output).decode()
    metadata = state.get("metadata") if isinstance(state.get("metadata"), dict) else {}
    full = truncated_full_size(text) if metadata.get("truncated") is True else None
    blocks = [text] if full is not None else split_joined_text(text)
    content = [{"type": "text", "text": block} for block in blocks]
    if status == "completed":
        return tool_call_from_result(
            index=index,
            call_id=str(part.get("callID") or part.get("id") or index),
            tool=tool,
            arguments=state.get("input") or {},
            content=content if output is not None else [],
            latency_ms=max(0.0, latency),
            shown=content if full is not None and output is not None else None,
            full_size=full,
        )
    error = state.get("error") if status == "error" else None
    message = (
        str(error) if error else f"no result: the call was still {status or 'pending'} when the session ended"
    )
    return tool_call_from_result(
        index=index,
        call_id=str(part.get("callID") or part.get("id") or index),
        tool=tool,
        arguments=state.get("input") or {},
        content=[{"type": "text", "text": message}],
        is_error=True,
        error_text=message,
        latency_ms=max(0.0, latency),
    )


_TRUNCATED = re.compile(r"\n\n\.\.\.(?P<count>\d+) (?P<unit>bytes|lines) truncated\.\.\.\n\n")


def truncated_full_size(text: str) -> tuple[int, int]:
    """(bytes, tokens) of the whole result behind opencode's truncated output.

    opencode keeps the head of a long output, says how many bytes it cut
    (`...N bytes truncated...`) and where it saved the whole. The whole is the
    kept head plus those bytes; when it counts lines instead, the shown text is all
    that is known.
    """
    match = _TRUNCATED.search(text)
    size = len(text.encode("utf-8"))
    if match is not None:
        kept = len(text[: match.start()].encode("utf-8"))
        size = kept + int(match.group("count")) if match.group("unit") == "bytes" else size
    return size, -(-size // BYTES_PER_TOKEN)


def convert_opencode_export(
    export: Any, *, server_name: str | None, max_requests: int | None = None
) -> RunnerOutput:
    """Turn an `opencode export` session into a runner output (see the module docstring).

    `server_name`: the MCP server whose tools are renamed back (`<key>_<tool>` ->
    `<tool>`); other tools, or all with None, keep the name opencode gave them.
    Raises SessionFormatError when `export` is not an opencode export.
    """
    validate_opencode_export(export)
    prefix = f"{opencode_server_key(server_name)}_" if server_name else ""
    steps: list[ModelTurn | ToolCall] = []
    final_answer: str | None = None
    model: str | None = None
    error_reason: str | None = None
    last_finish: str | None = None
    turns = 0
    ended: datetime | None = None

    def flush(turn: _Turn) -> None:
        nonlocal turns
        if turn.empty:
            return
        text = "".join(turn.text)
        steps.append(
            ModelTurn(
                index=len(steps),
                text=text,
                thinking=turn.thinking,
                usage=_usage(
                    turn.tokens, [text, turn.thinking, [c["state"].get("input") for c in turn.calls]]
                ),
            )
        )
        turns += 1
        for part in turn.calls:
            name = part["tool"]
            owned = prefix and name.startswith(prefix) and len(name) > len(prefix)
            steps.append(_tool_call(part, name[len(prefix) :] if owned else name, len(steps)))

    for message in export["messages"]:
        info = message["info"]
        if info["role"] != "assistant":
            continue
        model = info.get("modelID") or model
        if info.get("error"):
            error = info["error"]
            data = error.get("data") if isinstance(error, dict) else None
            detail = data.get("message") if isinstance(data, dict) else None
            name = error.get("name") if isinstance(error, dict) else None
            error_reason = f"{name or 'error'}: {detail or error}"
        ended = _ms_to_datetime((info.get("time") or {}).get("completed")) or ended
        turn = _Turn()
        message_text: list[str] = []
        for part in message["parts"]:
            kind = part["type"]
            if kind == "step-start":
                flush(turn)
                turn, message_text = _Turn(), []
            elif kind == "reasoning" and part.get("text"):
                turn.thinking.append(part["text"])
            elif kind == "text" and part.get("text") and not part.get("synthetic"):
                turn.text.append(part["text"])
                message_text.append(part["text"])
            elif kind == "tool":
                turn.calls.append(part)
            elif kind == "step-finish":
                turn.tokens = part.get("tokens") or {}
                last_finish = part.get("reason") or last_finish
                flush(turn)
                turn = _Turn()
        flush(turn)
        last_finish = info.get("finish") or last_finish
        if message_text and last_finish not in ("tool-calls", "tool_calls"):
            final_answer = "".join(message_text)

    status: TraceStatus
    reason: str | None = None
    if error_reason:
        status, reason = "error", f"the model request failed: {error_reason}"
    elif max_requests is not None and turns >= max_requests:
        status, reason = "incomplete", f"reached the limit of {max_requests} model requests"
    elif final_answer is None:
        status, reason = "incomplete", "the session ended without a final answer"
    else:
        status = "completed"
    started = _ms_to_datetime((export["info"].get("time") or {}).get("created"))
    return RunnerOutput(
        status=status,
        status_reason=reason,
        steps=steps,
        final_answer=final_answer,
        model=model,
        started_at=started,
        ended_at=ended if started and ended and ended >= started else None,
    )
