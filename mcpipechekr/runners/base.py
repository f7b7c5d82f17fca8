"""What every Phase 1 runner is given and what it returns.

A runner drives one agent through one task attempt. It is told how to reach the
server under test — always through the capture proxy (`AgentServer`, defined
by the capture package that hands it out), never directly — and returns what
only it knows: the model turns (text, thinking, token usage per request), its
own view of the tool calls, and the final answer. The trace is then assembled
from that output and the proxy's journal, so a runner that exports little still
yields a trace whose tool calls are complete.

Runners are async so that many task attempts can run at once within one event
loop (`--concurrency`); a runner that drives a subprocess awaits it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import ClassVar, Literal, Protocol

from mcpipechekr.artifacts.trace import ModelTurn, ToolCall, TraceStatus
from mcpipechekr.capture.agent_server import AgentServer
from mcpipechekr.config import Config
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.tasks import Task

RunnerName = Literal["native", "opencode", "claude-code", "demo", "import"]
DEMO_MODEL_LABEL = "scripted demo model"
"""How the demo provider is named wherever a provider or model is shown, so nobody mistakes it for an LLM."""


@dataclass(frozen=True)
class RunRequest:
    """One attempt at one task, fully specified: a runner needs nothing else."""

    task: Task
    prompt: str
    """The exact text sent to the agent: the task's prompt, with no hint of what optimal looks like."""
    provider: ProviderSpec
    repetition: int
    server: AgentServer
    journal: Path
    """The capture proxy's JSONL journal for this attempt (the runner does not write it)."""
    workdir: Path
    """A scratch folder of this attempt's own: per-run agent configs, exports, logs."""
    config: Config
    """The effective configuration: endpoints, redactor, timeouts."""
    timeout_s: float
    max_requests: int
    """Most model requests the agent may make; reaching it ends the attempt as `incomplete`."""


@dataclass
class RunnerOutput:
    """What the runner saw; `assemble` turns it and the journal into a Trace."""

    status: TraceStatus
    status_reason: str | None = None
    steps: list[ModelTurn | ToolCall] = field(default_factory=list)
    """Model turns and the runner's own view of tool calls, in order. Tool-call results here may be
    partial (a CLI may truncate them); the journal's evidence replaces them in the trace."""
    final_answer: str | None = None
    model: str | None = None
    """The model name the provider reported, when it differs from the provider string's."""
    started_at: datetime | None = None
    ended_at: datetime | None = None


class Runner(Protocol):
    """Drives one agent through one task attempt."""

    name: ClassVar[RunnerName]

    async def run(self, request: RunRequest) -> RunnerOutput: ...


RunnerFactory = Callable[[], Runner]
