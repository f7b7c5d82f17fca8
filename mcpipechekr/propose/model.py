"""Model-written proposals: a pydantic-ai agent writes prompts and multi-step tasks from the explored data.

Why: templates ask plain questions ("What is the price of the book titled X?");
a model can word them as users do and chain several tools. It is shown the
tool definitions and what exploration observed (each read-only call with its
arguments and a trimmed result) and answers with JSON in the shape of
`ProposedTasks`. Nothing it says is trusted: every task goes through the same
verification as a template's (`verify.py`), and one whose answer the server
does not give again is refused.
"""

from __future__ import annotations

import asyncio
from typing import Any

import mcp_types
import orjson
from pydantic import BaseModel, Field

from mcpipechekr._util.redact import Redactor
from mcpipechekr.errors import UserError
from mcpipechekr.propose.explore import Exploration
from mcpipechekr.propose.templates import Proposal

MAX_OBSERVATIONS = 30
MAX_RESULT_CHARS = 1500

INSTRUCTIONS = """\
You write evaluation tasks for an MCP server: requests a real user would give an AI agent that has
the server's tools. Write {count} tasks from the data below, varied: lookups, counts, comparisons,
and tasks that need two or more tools in a row.

Rules:
- `prompt`: what the user types. Never name a tool or a parameter; use the real entities and values
  of the observed results.
- `reference_calls`: the tool calls, in order, that produce the answer. Use only the tools listed,
  with arguments their input schemas accept; take values from the observed results.
- `expected_result`: the answer, as JSON values that appear in the LAST reference call's result (a
  field's value, or a number of listed records). Keep it short: a number, a name, a date, or a
  small list or mapping of such values.
- `task_type`: "deterministic" (one right answer).
- `tags`: lowercase slugs.

Answer with JSON only.

Tools:
{tools}

Observed read-only calls and their results:
{observations}
"""


class ProposedCall(BaseModel):
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ProposedTask(BaseModel):
    prompt: str
    task_type: str = "deterministic"
    reference_calls: list[ProposedCall]
    expected_result: Any = None
    tags: list[str] = Field(default_factory=list)


class ProposedTasks(BaseModel):
    """The model's answer."""

    tasks: list[ProposedTask]


def describe_tools(tools: list[mcp_types.Tool]) -> str:
    return "\n".join(
        orjson.dumps(
            {"name": tool.name, "description": tool.description or "", "input_schema": tool.input_schema}
        ).decode()
        for tool in tools
    )


def describe_observations(found: Exploration, redactor: Redactor) -> str:
    """The observed calls for the model, every secret of the configuration masked (it is a third party)."""
    lines = []
    for obs in found.observations[:MAX_OBSERVATIONS]:
        result = orjson.dumps(obs.document, default=str).decode()
        if len(result) > MAX_RESULT_CHARS:
            result = result[:MAX_RESULT_CHARS] + "…"
        lines.append(f"- {obs.tool}({orjson.dumps(obs.arguments).decode()}) → {result}")
    return redactor.redact("\n".join(lines)) or "(none)"


def model_proposals(
    model: Any, label: str, found: Exploration, count: int, timeout_s: float, redactor: Redactor
) -> list[Proposal]:
    """Ask the model for `count` tasks over what was found; its answer parsed into proposals."""
    from pydantic_ai import Agent, PromptedOutput
    from pydantic_ai.settings import ModelSettings

    tools = [tool for tool in found.tools if tool.name in found.callable]
    agent = Agent(
        model,
        output_type=PromptedOutput(ProposedTasks),
        instructions=INSTRUCTIONS.format(
            count=count,
            tools=redactor.redact(describe_tools(tools)),
            observations=describe_observations(found, redactor),
        ),
        model_settings=ModelSettings(timeout=timeout_s),
        retries=1,
    )
    try:
        answer = asyncio.run(agent.run(f"Write {count} tasks.")).output
    except Exception as exc:
        raise UserError(f"the model {label} could not propose tasks: {type(exc).__name__}: {exc}") from exc
    out = []
    for task in answer.tasks:
        calls = [(call.tool, dict(call.arguments)) for call in task.reference_calls]
        out.append(
            Proposal(
                prompt=task.prompt.strip(),
                expected_tool=calls[-1][0] if calls else "",
                expected_result=task.expected_result,
                reference_calls=calls,
                tags=[*task.tags, "model"],
                template="model",
                slug_hint=task.prompt,
                task_type="deterministic",
                min_calls=len(calls) or None,
            )
        )
    return out
