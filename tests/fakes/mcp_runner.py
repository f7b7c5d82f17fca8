"""A Runner for tests: no model, a script of tool calls made through the proxied server with mcp.Client.

It drives the real path every runner takes (the capture proxy's stdio command
or HTTP URL from `request.server`, the journal, the assembler, the engine) with
a deterministic "agent": for each task, a list of (tool, arguments) calls, one
model turn before each call and a final turn, each turn costing `delay_s`
seconds (a simulated model latency) and fixed token usage.

Switches for the ways attempts end: `report_calls=False` reports no tool calls
(the journal alone must supply them), `hang=True` never finishes (timeouts,
Ctrl-C), `answer` decides the final answer text.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from mcpipechekr.artifacts.trace import ModelTurn, ToolCall, Usage
from mcpipechekr.runners.base import RunnerName, RunnerOutput, RunRequest

Script = Callable[[RunRequest], list[tuple[str, dict[str, Any]]]]
TURN_USAGE = Usage(input_tokens=100, output_tokens=20, source="reported")


_SSL = ssl.create_default_context()
"""One TLS context for every HTTP client: building one costs ~60 ms of CPU, which would otherwise be
paid per attempt inside the shared event loop (the agent is not what the benchmarks measure)."""


@asynccontextmanager
async def _client(request: RunRequest) -> AsyncIterator[Client]:
    server = request.server
    if server.transport == "stdio":
        params = StdioServerParameters(
            command=server.command or "", args=list(server.args), env=server.env or None, cwd=server.cwd
        )
        async with Client(params) as client:
            yield client
        return
    async with httpx2.AsyncClient(verify=_SSL, timeout=httpx2.Timeout(30.0, read=300.0)) as http:
        async with Client(streamable_http_client(server.url or "", http_client=http)) as client:
            yield client


@dataclass
class ClientRunner:
    """Calls the script's tools in order; see the module doc."""

    script: Script
    delay_s: float = 0.0
    report_calls: bool = True
    hang: bool = False
    answer: Callable[[RunRequest, list[str]], str] = lambda request, texts: " | ".join(texts)
    seen: list[RunRequest] = field(default_factory=list)

    name: ClassVar[RunnerName] = "native"

    async def run(self, request: RunRequest) -> RunnerOutput:
        self.seen.append(request)
        started = datetime.now(UTC)
        steps: list[ModelTurn | ToolCall] = []
        texts: list[str] = []
        async with _client(request) as client:
            for number, (tool, arguments) in enumerate(self.script(request)):
                await anyio.sleep(self.delay_s)
                steps.append(ModelTurn(index=0, text=f"calling {tool}", usage=TURN_USAGE))
                result = await client.call_tool(tool, arguments)
                text = "".join(getattr(block, "text", "") for block in result.content)
                texts.append(text)
                if self.report_calls:
                    steps.append(
                        ToolCall(
                            index=0,
                            call_id=f"call-{number}",
                            tool=tool,
                            arguments=arguments,
                            latency_ms=0.0,
                            result_bytes=0,
                            result_tokens_estimated=0,
                        )
                    )
            if self.hang:
                await anyio.sleep_forever()
            await anyio.sleep(self.delay_s)
        answer = self.answer(request, texts)
        steps.append(ModelTurn(index=0, text=answer, usage=TURN_USAGE))
        return RunnerOutput(
            status="completed",
            steps=steps,
            final_answer=answer,
            started_at=started,
            ended_at=datetime.now(UTC),
        )
