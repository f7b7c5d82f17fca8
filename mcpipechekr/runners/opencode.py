"""The opencode runner: `opencode run` drives the task, `opencode export` tells us what it did.

Two modes (`--opencode-mode`): `run`, described here, starts an `opencode run`
per attempt; `serve`, Phase 1's default, keeps one `opencode serve` for all
the runner's attempts and drives each over its HTTP API (`_run_served`, with
the process itself in opencode_serve.py); both write the same config
(opencode_config.py) and convert the session with `convert_opencode_export`
(opencode_export.py, which describes the conversion).

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

Shutdown: as it exits, opencode stops the server behind the capture proxy
itself (SIGTERM to the proxy's children, then it closes the proxy's stdin).
The proxy tells that from a crash (`capture/stdio_proxy.py`), so a completed
attempt does not halt the run.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

import anyio
import orjson

from mcpipechekr.artifacts._base import utc_now
from mcpipechekr.artifacts.atomic import atomic_write_json
from mcpipechekr.errors import UserError
from mcpipechekr.runners.base import RunnerName, RunnerOutput, RunRequest
from mcpipechekr.runners.cliagent import CliAgentRunner, SecretEnv, find_cli, run_cli
from mcpipechekr.runners.opencode_config import (
    build_opencode_config,
    opencode_model,
    opencode_server_key,
    served_mcp_entry,
)
from mcpipechekr.runners.opencode_export import (
    convert_opencode_export,
    export_from_events,
    parse_event_lines,
    session_id_from_events,
)
from mcpipechekr.runners.opencode_serve import OpencodeServe, OpencodeServerDown
from mcpipechekr.runners.registry import OPENCODE_MODES, OpencodeMode

OPENCODE_ENV_VAR = "MCPIPECHEKR_OPENCODE"
INSTALL_HINT = "npm install -g opencode-ai"
EXPORT_TIMEOUT_S = 60.0
MIN_EXPORT_S = 2.0

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
                body={"name": key, "config": served_mcp_entry(request.server, timeout_ms)},
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


def _event_error(event: dict[str, Any]) -> str:
    error = event.get("error") or {}
    if isinstance(error, dict):
        data = error.get("data") or {}
        message = data.get("message") if isinstance(data, dict) else None
        return f"opencode reported {error.get('name') or 'an error'}: {message or data or error}"
    return f"opencode reported an error: {error}"
