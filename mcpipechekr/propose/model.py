"""Model-written proposals: a pydantic-ai agent words the questions as users do, and adds its own.

Why: templates ask plain questions ("What is the status of the note "Budget
2026"?"); a model can word them as users do and chain several tools. It is
shown the tool definitions, what exploration observed (each read-only call
with its arguments and a trimmed result) and the facts behind the templates'
questions (numbered, each with its answer), and answers with JSON in the shape
of `ProposedTasks`: `rewrites` rewords a numbered question, `tasks` are its
own. Nothing it says is trusted. A rewording is kept only when it still names
every value the question quoted, gives no answer away and names no tool; the
question keeps its reference calls and its rule, so the answer is still the
server's. Its own tasks go through the same verification as a template's
(`verify.py`), and one whose answer the server does not give again is refused.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from typing import Any

import mcp_types
import orjson
from pydantic import BaseModel, Field

from mcpipechekr._util.redact import Redactor
from mcpipechekr.errors import UserError
from mcpipechekr.evaluate.matching import Haystack
from mcpipechekr.propose.explore import Exploration
from mcpipechekr.propose.templates import Proposal

MAX_OBSERVATIONS = 30
MAX_RESULT_CHARS = 1500
MAX_FACTS = 40

INSTRUCTIONS = """\
You write evaluation tasks for an MCP server: requests a real user would give an AI agent that has
the server's tools. Write {count} tasks from the data below, varied: lookups, counts, comparisons,
and tasks that need two or more tools in a row.

First, reword the numbered questions below as the users of this server would ask them, in
`rewrites`: {{"id": <number>, "prompt": "..."}}. Keep every quoted name and value of the question
(write it as the data does), keep the meaning exactly, and never state the answer.
{about}
Then write your own tasks in `tasks`.

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

Questions to reword (id, question, answer):
{facts}
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


class Rewrite(BaseModel):
    id: int
    prompt: str


class ProposedTasks(BaseModel):
    """The model's answer."""

    tasks: list[ProposedTask] = Field(default_factory=list)
    rewrites: list[Rewrite] = Field(default_factory=list)


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
        document = obs.document
        result = document if isinstance(document, str) else orjson.dumps(document, default=str).decode()
        if len(result) > MAX_RESULT_CHARS:
            result = result[:MAX_RESULT_CHARS] + "…"
        lines.append(f"- {obs.tool}({orjson.dumps(obs.arguments).decode()}) → {result}")
    return redactor.redact("\n".join(lines)) or "(none)"


def describe_facts(candidates: list[Proposal], redactor: Redactor) -> str:
    lines = [
        f"{number}. {proposal.prompt} → {orjson.dumps(proposal.expected_result, default=str).decode()}"
        for number, proposal in enumerate(candidates[:MAX_FACTS], start=1)
    ]
    return redactor.redact("\n".join(lines)) or "(none)"


def model_proposals(
    model: Any,
    label: str,
    found: Exploration,
    count: int,
    timeout_s: float,
    redactor: Redactor,
    candidates: list[Proposal] = (),  # type: ignore[assignment]
    *,
    about: str | None = None,
) -> list[Proposal]:
    """The model's own tasks first, then the candidates, each reworded where the model's wording holds."""
    from pydantic_ai import Agent, PromptedOutput
    from pydantic_ai.settings import ModelSettings

    candidates = list(candidates)
    tools = [tool for tool in found.tools if tool.name in found.callable]
    steer = f"The user wants tasks about: {about}. Prefer those.\n" if about else ""
    agent = Agent(
        model,
        output_type=PromptedOutput(ProposedTasks),
        instructions=INSTRUCTIONS.format(
            count=count,
            tools=redactor.redact(describe_tools(tools)),
            observations=describe_observations(found, redactor),
            facts=describe_facts(candidates, redactor),
            about=steer,
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
    rewrites = {rewrite.id: rewrite.prompt.strip() for rewrite in answer.rewrites}
    for number, proposal in enumerate(candidates, start=1):
        reworded = rewrites.get(number)
        if reworded and faithful(proposal, reworded, found):
            proposal = replace(proposal, prompt=reworded, tags=[*proposal.tags, "reworded"])
        out.append(proposal)
    return out


def faithful(proposal: Proposal, reworded: str, found: Exploration) -> bool:
    """Whether a rewording keeps every quoted value of the question, states no answer, names no tool."""
    said = Haystack([reworded])
    quoted = re.findall(r'"([^"]+)"', proposal.prompt)
    if not all(said.contains(value, strict=True) for value in quoted):
        return False
    lowered = reworded.lower()
    if any(re.search(rf"\b{re.escape(tool.name.lower())}\b", lowered) for tool in found.tools):
        return False
    answer = proposal.expected_result
    values = [answer] if not isinstance(answer, list | dict) else []
    return not any(
        not isinstance(v, bool)
        and said.contains(v, strict=True)
        and not Haystack([proposal.prompt]).contains(v, strict=True)
        for v in values
        if not (isinstance(v, int | float) and abs(v) < 10)
    )
