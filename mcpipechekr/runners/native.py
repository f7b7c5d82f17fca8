"""The native runner: a pydantic-ai agent whose only tools are the server's, reached over MCP.

One attempt is one `Agent.run`: the model named by the provider string (built by
`mcpipechekr.llm.build_model` on the provider's first attempt and shared by the
runner's later ones), the exact task prompt as the user message, and the
server under test as an `MCPToolset` pointing at `request.server`, the capture
proxy (its stdio command, or its HTTP URL with headers). Nothing else is given to
the model: the instructions are `NATIVE_INSTRUCTIONS`, a neutral line that says
nothing about how to use these particular tools, so the trace shows what the
tool descriptions alone lead a model to do.

How an attempt ends:
- `completed`: the model answered in text;
- `timeout`: `request.timeout_s` passed (the whole attempt, model and tools);
- `incomplete`: the model wanted more than `request.max_requests` requests;
- `error`: the provider failed (HTTP error, refused request, malformed answer),
  with the reason in one redacted line;
- the server under test closed the connection (it crashed, or the proxy lost it):
  `ServerHalt` naming the task, with the partial output attached as `partial`,
  so the run halts instead of feeding a dead server to the remaining tasks.

Tool errors (an MCP result with isError, or a JSON-RPC error) are shown to the
model as failed tool results (`tool_error_behavior="failed"`) without retry
wording, as most agent frameworks do, and are recorded as errors in the trace.
A configuration problem (unknown provider, missing API key) raises `UserError`
before anything runs: it would fail every task the same way.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterable
from datetime import UTC, datetime
from typing import Any, ClassVar

import anyio
from pydantic_ai import Agent, capture_run_messages
from pydantic_ai.exceptions import (
    AgentRunError,
    ModelAPIError,
    ModelRetry,
    ToolFailed,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
)
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.usage import UsageLimits

from mcpipechekr.config import Config, Redactor
from mcpipechekr.errors import ServerHalt
from mcpipechekr.llm import build_model, quiet_agents, tls_context
from mcpipechekr.runners.base import AgentServer, RunnerName, RunnerOutput, RunRequest, TraceStatus
from mcpipechekr.runners.messages import final_answer, steps_from_messages

NATIVE_INSTRUCTIONS = "Use the tools to answer the user's request. Answer concisely."
"""The agent's only instructions, the same for every task and server (documented in docs/runners.md)."""

TOOL_RETRIES = 2
"""Times the agent may resend a tool call whose arguments failed the tool's input schema."""

CONNECTION_CLOSED = -32000
"""The MCP SDK's error code for a connection that closed under a pending request."""

quiet_agents()  # the demo model runs through here too, and never reaches build_model


class ServerLost(Exception):
    """Raised inside the agent when the MCP connection to the server under test is gone."""

    def __init__(self, tool: str | None, detail: str):
        where = f"during a call to {tool}" if tool else "outside any tool call (at start or between calls)"
        super().__init__(f"the MCP server closed the connection {where}: {detail}")
        self.tool = tool


def _connection_lost(exc: BaseException) -> bool:
    """Whether an MCP tool failure means the server (or the proxy in front of it) is gone."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if getattr(current, "code", None) == CONNECTION_CLOSED:
            return True
        if isinstance(current, anyio.ClosedResourceError | anyio.BrokenResourceError):
            return True
        if type(current).__name__ in {"ConnectError", "RemoteProtocolError"}:
            return True  # httpx: the HTTP server (or proxy) is no longer there
        current = current.__cause__ or current.__context__
    return False


def _lost_in_group(exc: BaseException) -> ServerLost | None:
    """A ServerLost that parallel tool calls wrapped in an exception group, if there is one."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _lost_in_group(inner)
            if found is not None:
                return found
        return None
    return exc if isinstance(exc, ServerLost) else None


class _CallTimer:
    """`process_tool_call` hook: measures each call's wall time and spots a lost server."""

    def __init__(self) -> None:
        self.latencies: dict[str, float] = {}

    async def __call__(self, ctx: Any, call_tool: Any, name: str, args: dict[str, Any]) -> Any:
        started = time.perf_counter()
        try:
            return await call_tool(name, args)
        except (ModelRetry, ToolFailed) as exc:
            if _connection_lost(exc):
                raise ServerLost(name, str(exc)) from exc
            raise
        finally:
            if ctx.tool_call_id:
                self.latencies[ctx.tool_call_id] = (time.perf_counter() - started) * 1000.0


def mcp_toolset(server: AgentServer, request: RunRequest, hook: Any) -> MCPToolset:
    """The MCP toolset for the agent: the proxy's stdio command (with our environment) or its URL."""
    options: dict[str, Any] = {
        "id": server.name,
        "tool_error_behavior": "failed",
        "process_tool_call": hook,
        "init_timeout": request.config.server.health.timeout_s,
        "read_timeout": request.config.timeouts.tool_call_s,
        "include_instructions": False,
    }
    if server.transport == "stdio":
        from fastmcp.client.transports import StdioTransport

        transport = StdioTransport(
            command=server.command or "",
            args=list(server.args),
            env={**os.environ, **server.env},
            cwd=server.cwd,
            keep_alive=False,
        )
        return MCPToolset(transport, **options)
    # The shared TLS context: the proxy is plain HTTP, but an HTTP client builds one anyway (~60 ms).
    return MCPToolset(server.url or "", headers=dict(server.headers) or None, verify=tls_context(), **options)


def one_line(text: str, limit: int = 500) -> str:
    """A reason fit for `status_reason`: one line, bounded."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def redact_text(request: RunRequest, text: str) -> str:
    """Text with the config's secrets and the provider's API key replaced (`${NAME}`).

    The trace assembler redacts everything again with the run's redactor; this keeps
    a key a provider echoes in an error message out of the runner's own output too.
    """
    text = request.config.redactor.redact(text)
    endpoint = request.config.providers.endpoint_for(request.provider)
    names = [endpoint.api_key_env] if endpoint is not None and endpoint.api_key_env else []
    names.append(f"{request.provider.provider.upper().replace('-', '_')}_API_KEY")
    environ = request.config.environ
    for name in names:
        value = environ.get(name)
        if value and len(value) >= Redactor.MIN_LENGTH:
            text = text.replace(value, f"${{{name}}}")
    return text


def _now() -> datetime:
    return datetime.now(UTC)


class NativeRunner:
    """A pydantic-ai agent with the server's tools as an MCP toolset.

    `stream=True` makes every model request a streamed one (server-sent events),
    as interactive agents do; usage is then what the stream's final chunk reports.
    """

    name: ClassVar[RunnerName] = "native"
    estimate_usage: ClassVar[bool] = False
    """True for models whose usage is not a provider's (the scripted demo)."""

    def __init__(self, *, stream: bool = False):
        self.stream = stream
        self._models: dict[tuple[str, int], tuple[Config, Any]] = {}

    def build_model(self, request: RunRequest) -> Any:
        """The model for this attempt; a UserError if the provider cannot be used."""
        return build_model(request.provider, request.config, purpose="the Phase 1 agent")

    def model_for(self, request: RunRequest) -> Any:
        """The provider's model, built on its first attempt and shared by the attempts that follow.

        Building a model costs a new HTTP client and TLS context (see `mcpipechekr.llm`); concurrent
        attempts share one as they would share a provider's connection pool.
        """
        key = (str(request.provider), id(request.config))
        cached = self._models.get(key)
        if cached is None:
            cached = self._models[key] = (request.config, self.build_model(request))
        return cached[1]

    async def aclose(self) -> None:
        """Close the HTTP clients of the models built so far; the engine calls it when the run is over."""
        models, self._models = list(self._models.values()), {}
        for _, model in models:
            async with model:  # leaving the last context closes the client the model's provider made
                pass

    def model_label(self, request: RunRequest, messages: list[ModelMessage]) -> str | None:
        """The model name the provider reported, when it differs from the provider string's."""
        names = [m.model_name for m in messages if isinstance(m, ModelResponse) and m.model_name]
        if names and names[-1] != request.provider.model:
            return names[-1]
        return None

    async def run(self, request: RunRequest) -> RunnerOutput:
        model = self.model_for(request)
        timer = _CallTimer()
        toolset = mcp_toolset(request.server, request, timer)
        agent = Agent(model, toolsets=[toolset], instructions=NATIVE_INSTRUCTIONS, retries=TOOL_RETRIES)
        limits = UsageLimits(request_limit=request.max_requests)
        started = _now()
        status: TraceStatus = "completed"
        reason: str | None = None
        lost: ServerLost | None = None
        with capture_run_messages() as messages:
            try:
                with anyio.fail_after(request.timeout_s):
                    await agent.run(
                        request.prompt,
                        usage_limits=limits,
                        event_stream_handler=_drain if self.stream else None,
                    )
            except TimeoutError:
                status, reason = "timeout", f"the attempt ran past its {request.timeout_s:g} s timeout"
            except UsageLimitExceeded:
                status = "incomplete"
                reason = f"the agent reached the limit of {request.max_requests} model requests"
            except ServerLost as exc:
                status, reason, lost = "incomplete", str(exc), exc
            except (ModelAPIError, UnexpectedModelBehavior, AgentRunError) as exc:
                status, reason = "error", f"{type(exc).__name__}: {exc}"
            except Exception as exc:
                lost = _lost_in_group(exc)
                if lost is None and _connection_lost(exc):
                    lost = ServerLost(None, f"{type(exc).__name__}: {exc}")
                if lost is None:
                    raise
                status, reason = "incomplete", str(lost)
        history = list(messages)
        answer = final_answer(history) if status == "completed" else None
        output = RunnerOutput(
            status=status,
            status_reason=redact_text(request, one_line(reason)) if reason else None,
            steps=steps_from_messages(history, estimate_usage=self.estimate_usage, latencies=timer.latencies),
            final_answer=redact_text(request, answer) if answer is not None else None,
            model=self.model_label(request, history),
            started_at=started,
            ended_at=_now(),
        )
        if lost is not None:
            halt = ServerHalt(
                f"task {request.task.task_id} (repetition {request.repetition}): {output.status_reason}"
            )
            halt.partial = output  # type: ignore[attr-defined]
            raise halt from lost
        return output


async def _drain(ctx: Any, events: AsyncIterable[Any]) -> None:
    """Consume streamed events: passing a handler is what makes pydantic-ai stream each request."""
    async for _ in events:
        pass
