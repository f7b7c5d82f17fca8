"""The Claude Code runner: `claude -p --output-format stream-json` drives the task; its stream is the export.

How one attempt runs:

1. An MCP config naming only the server under test (the capture proxy's
   command, or its URL) is written into the attempt's scratch folder and passed
   with `--mcp-config … --strict-mcp-config`, so no other MCP server of the
   user's is loaded. Secret values (the server's environment, header values)
   are written as `${NAME}` references, which Claude Code expands from its own
   environment, where they are passed.
2. `claude -p --output-format stream-json --verbose --include-partial-messages
   --model M --max-turns N --allowedTools mcp__<server>__* --tools ""` runs in
   an empty folder with the prompt on stdin. `--tools ""` removes the built-in
   tools (Bash, Read, Edit, ...) so the agent sees only the server's tools;
   `keep_builtin_tools=True` leaves them (Claude Code still refuses, in `-p`
   mode, those that would need a permission). `ENABLE_TOOL_SEARCH=false`
   makes it send the MCP tools to the model up front instead of behind a
   search tool, as every other runner does; `--no-session-persistence` keeps
   the session out of the user's history. `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`
   stops telemetry and update checks.
3. The model: `anthropic/<model>`, with the user's Claude Code credentials or
   `ANTHROPIC_API_KEY`; or an endpoint from config.yaml that speaks the
   Anthropic Messages API (its `base_url` becomes `ANTHROPIC_BASE_URL`, its
   `api_key_env` supplies `ANTHROPIC_API_KEY`). Keys are taken from the
   environment or the `.env` beside config.yaml (`Config.environ`); those
   from `.env` are withheld from the server by the capture proxy.
4. Shutdown: Claude Code stops its MCP server by signalling the process it
   launched, the capture proxy (SIGINT, then SIGTERM), which stops the server:
   an expected exit (`capture/stdio_proxy.py` tells it, and an agent stopping
   the server directly, from a crash).

One process per attempt, always (unlike opencode's `serve` mode): Claude Code
(tested with 2.1.332) cannot run attempts one after another in one process
and keep each the attempt a fresh `claude -p` makes. A `--input-format
stream-json` process takes one prompt per message, and its `mcp_set_servers`
control request swaps the server under test between attempts, but the only
reset of the conversation, the `/clear` command, leaves its own text blocks
before the next prompt: the model would be shown more than the task's prompt.
docs/runners.md ("One process per attempt") has the messages tried and what
each did; `bench/claude_code_runner.py` measures what a process per attempt
costs ("Cost per attempt").

The conversion (`convert_claude_stream`, also what `mcpipechekr import
--from claude-code` uses): Claude Code prints one `assistant` event per content
block, all carrying the same API message id; each message id is one model turn
(text, thinking blocks, and its tool_use blocks, which become tool calls after
the turn, their results taken from the `user` events' tool_result blocks).
Usage per turn: the input and cache counts of the message, and the output count
of its final `message_delta` (printed with `--include-partial-messages`). A log
recorded without partial messages has only the placeholder output count of
`message_start`; when the closing `result` event reports a larger total, the
difference is shared among the turns in proportion to the size of what each
produced, so the trace's total matches what the provider billed. Tool names
`mcp__<server>__<tool>` are mapped back to `<tool>`. A tool result is what the
model read (the tool_result block; the event's structuredContent is kept for
analysis but not priced again), and a result Claude Code replaced by a note that
it saved it to a file is priced as that note, the whole result's size kept apart. Events of sub-agents
(`parent_tool_use_id` set) are skipped: their tool calls still reach the
journal through the proxy.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

import orjson

from mcpipechekr._util.tokens import BYTES_PER_TOKEN, estimate_tokens
from mcpipechekr.artifacts._base import utc_now
from mcpipechekr.artifacts.atomic import atomic_write_json
from mcpipechekr.artifacts.trace import ModelTurn, ToolCall, Usage, measure_result, tool_call_from_result
from mcpipechekr.errors import UserError
from mcpipechekr.runners.base import AgentServer, RunnerName, RunnerOutput, RunRequest, TraceStatus
from mcpipechekr.runners.cliagent import (
    CliAgentRunner,
    SecretEnv,
    SessionFormatError,
    chdir_command,
    find_cli,
    run_cli,
)

CLAUDE_ENV_VAR = "MCPIPECHEKR_CLAUDE"
INSTALL_HINT = "npm install -g @anthropic-ai/claude-code"
_UNSAFE_NAME = re.compile(r"[^a-zA-Z0-9_-]")
_MCP_NAME = re.compile(r"^mcp__(?P<server>.+?)__(?P<tool>.+)$")


def claude_server_key(server_name: str) -> str:
    """The name Claude Code gives an MCP server in tool names (`my.server` -> `my_server`)."""
    return _UNSAFE_NAME.sub("_", server_name)


def build_mcp_config(server: AgentServer, secrets: SecretEnv) -> dict[str, Any]:
    """The `--mcp-config` file for one attempt (secrets referenced as `${NAME}`)."""
    key = claude_server_key(server.name)
    if server.transport == "stdio":
        argv = chdir_command(server.command or "", server.args, server.cwd)
        entry: dict[str, Any] = {
            "type": "stdio",
            "command": argv[0],
            "args": argv[1:],
            "env": {name: "${" + secrets.name_for(value) + "}" for name, value in server.env.items()},
        }
    else:
        entry = {
            "type": "http",
            "url": server.url,
            "headers": {name: "${" + secrets.name_for(value) + "}" for name, value in server.headers.items()},
        }
    return {"mcpServers": {key: entry}}


def claude_model_env(request: RunRequest) -> tuple[str, dict[str, str]]:
    """The `--model` argument and the environment that points Claude Code at the request's provider."""
    spec = request.provider
    if spec.model is None:
        raise UserError(f"provider '{spec}' names no model; the claude-code runner needs anthropic/<model>")
    endpoint = request.config.providers.endpoints.get(spec.provider)
    if endpoint is not None:
        env = {"ANTHROPIC_BASE_URL": re.sub(r"/v1/?$", "", endpoint.base_url.rstrip("/"))}
        key = request.config.environ.get(endpoint.api_key_env) if endpoint.api_key_env else None
        if key:
            env["ANTHROPIC_API_KEY"] = key
        return spec.model, env
    if spec.provider != "anthropic":
        raise UserError(
            f"the claude-code runner runs Anthropic models: '{spec}' is not one. Use anthropic/<model>, "
            "or an endpoint under providers.endpoints that speaks the Anthropic Messages API"
        )
    return spec.model, {}


class ClaudeCodeRunner(CliAgentRunner):
    """Runs one task attempt with the Claude Code CLI (see the module docstring)."""

    name: ClassVar[RunnerName] = "claude-code"

    def argv(self, binary: str, request: RunRequest, mcp_config: Path, model: str) -> list[str]:
        key = claude_server_key(request.server.name)
        argv = [
            binary, "-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages",
            "--no-session-persistence", "--mcp-config", str(mcp_config), "--strict-mcp-config",
            "--allowedTools", f"mcp__{key}__*", "--model", model, "--max-turns", str(request.max_requests),
        ]  # fmt: skip
        if not self.keep_builtin_tools:
            argv += ["--tools", ""]
        return argv

    async def run(self, request: RunRequest) -> RunnerOutput:
        binary = self.binary or find_cli("claude", CLAUDE_ENV_VAR, INSTALL_HINT)
        model, model_env = claude_model_env(request)
        started = utc_now()
        workdir = request.workdir
        project = workdir / "claude-project"  # empty: nothing for the agent to read
        project.mkdir(parents=True, exist_ok=True)
        secrets = SecretEnv("MCPIPECHEKR_SECRET_")
        mcp_config = atomic_write_json(workdir / "claude-mcp.json", build_mcp_config(request.server, secrets))
        timeouts = request.config.timeouts
        env = {
            **os.environ,
            **request.config.provider_env(),  # keys kept in .env, which os.environ does not hold
            **self.env,
            **model_env,
            **request.server.env,
            **secrets.values,
            "PWD": str(project),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "ENABLE_TOOL_SEARCH": "false",
            "MCP_TIMEOUT": str(int(request.config.server.health.timeout_s * 1000)),
            "MCP_TOOL_TIMEOUT": str(int(timeouts.tool_call_s * 1000)),
        }
        result = await run_cli(
            self.argv(binary, request, mcp_config, model),
            env=env,
            cwd=project,
            stdin_text=request.prompt,
            timeout_s=request.timeout_s,
        )
        redact = request.config.redactor.redact
        (workdir / "claude-stream.jsonl").write_text(redact("\n".join(result.stdout_lines)) + "\n")
        try:
            output = convert_claude_stream(
                result.stdout_lines,
                server_name=request.server.name,
                max_requests=request.max_requests,
                tolerate_bad_lines=True,
            )
        except SessionFormatError as exc:
            output = RunnerOutput(status="error", status_reason=str(exc.message))
        output.started_at, output.ended_at = started, utc_now()
        if result.timed_out:
            output.status = "timeout"
            output.status_reason = f"no final answer within the task's {request.timeout_s:g} s"
        elif result.returncode not in (0, None) and output.status == "completed":
            output.status = "error"
            output.status_reason = f"claude exited with code {result.returncode}: {result.stderr_tail}"
        elif output.status != "completed" and not output.status_reason:
            output.status_reason = f"claude exited with code {result.returncode}: {result.stderr_tail}"
        if output.status_reason:
            output.status_reason = redact(output.status_reason)
        return output


# --- conversion ------------------------------------------------------------------------------------


class _Turn:
    def __init__(self, message_id: str) -> None:
        self.message_id = message_id
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.tool_uses: list[dict[str, Any]] = []
        self.usage: dict[str, int] = {}
        self.final_usage = False
        self.request_id: str | None = None
        self.timestamp: datetime | None = None

    def add_usage(self, usage: Any, *, final: bool) -> None:
        if not isinstance(usage, dict):
            return
        for key, value in usage.items():
            if isinstance(value, int) and not isinstance(value, bool):
                self.usage[key] = value
        self.final_usage = self.final_usage or final

    def completion_size(self) -> int:
        return estimate_tokens([self.text, self.thinking, [use.get("input") for use in self.tool_uses]])


def _parse_lines(lines: Iterable[str | dict[str, Any]], tolerate_bad_lines: bool) -> list[dict[str, Any]]:
    events = []
    for number, line in enumerate(lines, start=1):
        if isinstance(line, dict):
            event: Any = line
        else:
            text = line.strip()
            if not text:
                continue
            try:
                event = orjson.loads(text)
            except orjson.JSONDecodeError:
                if tolerate_bad_lines:
                    continue
                raise SessionFormatError(
                    f"not a Claude Code stream-json log: line {number} is not JSON: {text[:80]!r}"
                ) from None
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            if tolerate_bad_lines:
                continue
            raise SessionFormatError(
                f"not a Claude Code stream-json log: line {number} is not an event object with a `type`"
            )
        events.append(event)
    return events


def _timestamp(event: dict[str, Any]) -> datetime | None:
    value = event.get("timestamp")
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else None


def _result_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [
            block if isinstance(block, dict) else {"type": "text", "text": str(block)} for block in content
        ]
    return []


def claude_session_prompt(lines: Iterable[str | dict[str, Any]]) -> str | None:
    """The prompt of a stream-json log when it records one (a `user` event with text, as
    `--replay-user-messages` prints); None otherwise."""
    for event in _parse_lines(lines, tolerate_bad_lines=True):
        if event.get("type") != "user" or event.get("parent_tool_use_id"):
            continue
        content = (event.get("message") or {}).get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            texts = [
                block.get("text", "")
                for block in content
                if isinstance(block, dict) and block.get("type") == "text"
            ]
            if texts:
                return "".join(texts)
    return None


def claude_client_version(lines: Iterable[str | dict[str, Any]]) -> str | None:
    """The Claude Code version that recorded a stream-json log (its `system`/`init` event), if it says."""
    for event in _parse_lines(lines, tolerate_bad_lines=True):
        if event.get("type") == "system" and event.get("subtype") == "init":
            version = event.get("claude_code_version")
            return version if isinstance(version, str) and version else None
    return None


def convert_claude_stream(
    lines: Iterable[str | dict[str, Any]],
    *,
    server_name: str | None,
    max_requests: int | None = None,
    tolerate_bad_lines: bool = False,
    keep_tool_names: bool = False,
) -> RunnerOutput:
    """Turn a Claude Code stream-json log into a runner output (see the module docstring).

    `server_name`: the MCP server whose tools are renamed back (`mcp__<key>__<tool>`
    -> `<tool>`); None renames every MCP tool. `keep_tool_names` renames none:
    `mcpipechekr import` maps the names against the server's tool list itself
    (runners/tool_names.py). Raises SessionFormatError when the log is not one
    (a line that is not a JSON event, no assistant or result event).
    """
    events = _parse_lines(lines, tolerate_bad_lines)
    if not any(event["type"] in ("assistant", "result", "stream_event") for event in events):
        raise SessionFormatError(
            "not a Claude Code stream-json log: it has no `assistant`, `stream_event` or `result` event "
            "(record it with `claude -p --output-format stream-json --verbose`)"
        )
    server_key = claude_server_key(server_name) if server_name else None
    turns: dict[str, _Turn] = {}
    results: dict[str, tuple[list[dict[str, Any]], Any, bool, datetime | None]] = {}
    result_event: dict[str, Any] | None = None
    model: str | None = None
    current: str | None = None

    def turn_for(message_id: str) -> _Turn:
        if message_id not in turns:
            turns[message_id] = _Turn(message_id)
        return turns[message_id]

    for event in events:
        kind = event["type"]
        if event.get("parent_tool_use_id"):
            continue
        if kind == "system" and event.get("subtype") == "init":
            model = event.get("model") or model
        elif kind == "stream_event":
            inner = event.get("event") or {}
            if inner.get("type") == "message_start":
                message = inner.get("message") or {}
                current = message.get("id") or current
                if current:
                    turn_for(current).add_usage(message.get("usage"), final=False)
            elif inner.get("type") == "message_delta":
                message_id = event.get("api_message_id") or current
                if message_id:
                    turn_for(message_id).add_usage(inner.get("usage"), final=True)
        elif kind == "assistant":
            message = event.get("message") or {}
            message_id = message.get("id") or event.get("uuid") or f"message-{len(turns)}"
            current = message_id
            turn = turn_for(message_id)
            turn.request_id = event.get("request_id") or turn.request_id
            turn.timestamp = turn.timestamp or _timestamp(event)
            model = message.get("model") or model
            if not turn.final_usage:
                turn.add_usage(message.get("usage"), final=False)
            for block in message.get("content") or []:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text" and block.get("text"):
                    turn.text.append(block["text"])
                elif block.get("type") == "thinking" and block.get("thinking"):
                    turn.thinking.append(block["thinking"])
                elif block.get("type") == "tool_use":
                    turn.tool_uses.append(block)
        elif kind == "user":
            content = (event.get("message") or {}).get("content")
            blocks = (
                [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
                if isinstance(content, list)
                else []
            )
            raw = event.get("tool_use_result") if len(blocks) == 1 else None
            for block in blocks:
                structured = raw.get("structuredContent") if isinstance(raw, dict) else None
                results[str(block.get("tool_use_id"))] = (
                    _result_blocks(block.get("content")),
                    structured,
                    bool(block.get("is_error")),
                    _timestamp(event),
                )
        elif kind == "result":
            result_event = event

    ordered = list(turns.values())
    _reconcile_output(ordered, result_event)
    steps: list[ModelTurn | ToolCall] = []
    for turn in ordered:
        usage = turn.usage
        text = "".join(turn.text)
        steps.append(
            ModelTurn(
                index=len(steps),
                text=text,
                thinking=turn.thinking,
                usage=Usage(
                    input_tokens=usage.get("input_tokens", 0),
                    output_tokens=usage.get("output_tokens", 0),
                    cache_read_tokens=usage.get("cache_read_input_tokens", 0),
                    cache_write_tokens=usage.get("cache_creation_input_tokens", 0),
                    source="reported",
                )
                if usage
                else Usage.estimated("", [text, turn.thinking]),
                request_id=turn.request_id,
            )
        )
        for use in turn.tool_uses:
            name = str(use.get("name") or "unknown")
            tool = name if keep_tool_names else _tool_name(name, server_key)
            steps.append(_tool_call(use, results.get(str(use.get("id"))), turn.timestamp, tool, len(steps)))

    status, reason, final_answer = _outcome(result_event, max_requests)
    times = [turn.timestamp for turn in ordered if turn.timestamp]
    return RunnerOutput(
        status=status,
        status_reason=reason,
        steps=steps,
        final_answer=final_answer,
        model=model,
        started_at=times[0] if times else None,
        ended_at=times[-1] if times else None,
    )


def _tool_name(name: str, server_key: str | None) -> str:
    match = _MCP_NAME.match(name)
    if match and (server_key is None or match.group("server") == server_key):
        return match.group("tool")
    return name


def _tool_call(
    use: dict[str, Any],
    result: tuple[list[dict[str, Any]], Any, bool, datetime | None] | None,
    asked_at: datetime | None,
    tool: str,
    index: int,
) -> ToolCall:
    arguments = use.get("input") if isinstance(use.get("input"), dict) else {}
    call_id = str(use.get("id") or index)
    if result is None:
        message = "no result: the session ended before the tool answered"
        return tool_call_from_result(
            index=index, call_id=call_id, tool=tool, arguments=arguments,
            content=[{"type": "text", "text": message}], is_error=True, error_text=message, latency_ms=0.0,
        )  # fmt: skip
    content, structured, is_error, answered_at = result
    latency = (answered_at - asked_at).total_seconds() * 1000 if answered_at and asked_at else 0.0
    full = preview_full_size(content, structured)
    return tool_call_from_result(
        index=index, call_id=call_id, tool=tool, arguments=arguments, content=content,
        structured_content=structured, is_error=is_error and full is None, latency_ms=max(0.0, latency),
        shown=content if full is not None else None, full_size=full,
    )  # fmt: skip


_TOO_LARGE = re.compile(
    r"^Error: result \((?P<chars>[\d,]+) characters\) exceeds maximum allowed tokens\. "
    r"Output has been saved to "
)
_PERSISTED = re.compile(r"^<persisted-output>\s*Output too large")


def preview_full_size(content: list[dict[str, Any]], structured: Any) -> tuple[int, int] | None:
    """(bytes, tokens) of the whole result when Claude Code showed the model only a preview; else None.

    Claude Code replaces a result over its limit with a note naming the file it saved
    it to (and, for large outputs of its own tools, a `<persisted-output>` preview). The
    whole result's size is its structuredContent when the log kept it, else the
    character count the note gives.
    """
    texts = [block.get("text") for block in content if block.get("type") == "text"]
    if len(texts) != 1 or not isinstance(texts[0], str):
        return None
    match = _TOO_LARGE.match(texts[0])
    if match is None and not _PERSISTED.match(texts[0]):
        return None
    if structured is not None:
        return measure_result([], structured)
    if match is None:
        return None
    chars = int(match.group("chars").replace(",", ""))
    return chars, -(-chars // BYTES_PER_TOKEN)


def _reconcile_output(turns: list[_Turn], result_event: dict[str, Any] | None) -> None:
    """Share the result's billed output tokens among turns whose final output count was never printed."""
    if not turns or result_event is None or all(turn.final_usage for turn in turns):
        return
    total = (result_event.get("usage") or {}).get("output_tokens")
    if not isinstance(total, int):
        return
    counted = sum(turn.usage.get("output_tokens", 0) for turn in turns)
    missing = total - counted
    open_turns = [turn for turn in turns if not turn.final_usage]
    if missing <= 0 or not open_turns:
        return
    weights = [max(1, turn.completion_size()) for turn in open_turns]
    shares = [missing * weight // sum(weights) for weight in weights]
    shares[-1] += missing - sum(shares)
    for turn, share in zip(open_turns, shares, strict=True):
        turn.usage["output_tokens"] = turn.usage.get("output_tokens", 0) + share


def _outcome(
    result: dict[str, Any] | None, max_requests: int | None
) -> tuple[TraceStatus, str | None, str | None]:
    if result is None:
        return (
            "incomplete",
            "the stream ended without a result event (the agent was stopped or crashed)",
            None,
        )
    subtype = result.get("subtype")
    answer = result.get("result") if isinstance(result.get("result"), str) else None
    if subtype == "success" and not result.get("is_error"):
        return "completed", None, answer
    if subtype == "error_max_turns":
        limit = max_requests if max_requests is not None else result.get("num_turns")
        return "incomplete", f"reached the limit of {limit} model requests", None
    errors = result.get("errors")
    detail = "; ".join(str(error) for error in errors) if isinstance(errors, list) and errors else answer
    return (
        "error",
        f"claude ended with {subtype or 'an error'}: {detail or result.get('terminal_reason')}",
        None,
    )
