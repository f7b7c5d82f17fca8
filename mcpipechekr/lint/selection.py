"""The tool-selection test: shown every tool and one query, which tool does a selector pick?

Queries are the tasks' prompts, each with the tool it needs first (its
`expected_tool`, else the tool of its first reference call), plus the
`selection_cases` of tasks.yaml. Two selectors:

- `LexicalSelector` (`lexical-bm25`): deterministic BM25F retrieval over each
  tool's name, title, description and parameters as separate, weighted fields,
  with the request's read or write intent (`lint.lexical`) and its intent
  phrases expanded (`QUERY_INTENTS`: "how many" adds "count"). It needs
  no model and no network, so lint runs offline; its picks show which
  descriptions share the query's words, not what a model would do, and the
  report labels them so. Its confidence is always `low`: a ranker has no
  calibrated confidence, so it never makes a tool misleading.
- `LlmSelector` (`llm:<provider/model>`): a pydantic-ai agent gets the tool list
  in its instructions and answers each query with JSON
  `{"tool": NAME | null, "confidence": "high" | "low"}` (prompted structured
  output, no tool calls, so any OpenAI-compatible endpoint can serve it). Each
  query is asked `repeat` times; requests run a few at a time.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from mcpipechekr.artifacts.tools_snapshot import ToolDefinition
from mcpipechekr.config import Config
from mcpipechekr.errors import UserError
from mcpipechekr.lint._text import schema_properties
from mcpipechekr.lint.lexical import Concept, LexicalIndex, expand_query, query_intent, terms
from mcpipechekr.llm import build_model
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.tasks import Task, TaskFile

LEXICAL = "lexical-bm25"
Confidence = Literal["high", "low"]


@dataclass(frozen=True)
class SelectionQuery:
    """One query of the test and the tool that should answer it."""

    text: str
    expected_tool: str
    source: str  # "task:<id>" or "case:<n>"


@dataclass(frozen=True)
class Choice:
    """One sample of a selector's answer: a tool name (None: no tool fits) and how sure it was."""

    tool: str | None
    confidence: Confidence


def first_tool(task: Task) -> tuple[str, str] | None:
    """The tool a task needs first and its field: `expected_tool`, else its first reference call's."""
    if task.expected_tool:
        return task.expected_tool, "expected_tool"
    if task.reference_calls:
        return task.reference_calls[0].tool, "reference_calls"
    return None


def selection_queries(taskfile: TaskFile | None) -> list[SelectionQuery]:
    """Each task's prompt with the tool it needs first (`first_tool`), then the selection cases, in order.

    The tasks are what users ask, in their words; a task with neither an `expected_tool` nor
    reference calls has no query.
    """
    if taskfile is None:
        return []
    queries = []
    for task in taskfile.tasks:
        first = first_tool(task)
        if first is not None:
            queries.append(SelectionQuery(task.prompt.strip(), first[0], f"task:{task.task_id}"))
    queries += [
        SelectionQuery(case.query.strip(), case.expected_tool, f"case:{index + 1}")
        for index, case in enumerate(taskfile.selection_cases)
    ]
    return queries


class Selector(Protocol):
    """Anything that picks tools for queries; `label` is what the report's `selector` says."""

    label: str

    def select(
        self, queries: Sequence[SelectionQuery], tools: Sequence[ToolDefinition], repeat: int
    ) -> list[list[Choice]]:
        """For each query, `repeat` samples (a deterministic selector may return one)."""
        ...


_SHOW_ONE = (
    r"\b(full|whole|entire|complete)\b"
    r"|\b(show|open|read|display) (me )?(the )?(email|message|item|record|document|file)\b"
)
QUERY_INTENTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bhow many\b|\bnumber of\b|\bhow often\b", re.IGNORECASE), "count number total"),
    (re.compile(_SHOW_ONE, re.IGNORECASE), "read complete full one"),
    (re.compile(r"\bright now\b|\bat the moment\b|\bcurrently\b|\bnow\b", re.IGNORECASE), "current"),
)
"""Question phrasings whose meaning hides in stop words ("how many" asks for a count): each adds the
words a description would use for that intent. Only the lexical selector uses them, and they are English."""


def query_terms(text: str) -> list[Concept]:
    """The query's ideas (`lexical.expand_query`) plus the words of the intents its phrasing expresses."""
    extra = [words_of for pattern, words_of in QUERY_INTENTS if pattern.search(text)]
    return expand_query(text, terms(" ".join(extra)))


class LexicalSelector:
    """BM25F over each tool's fields with the query's read/write intent (`lint.lexical`)."""

    label = LEXICAL

    def __init__(self) -> None:
        self.invocations = 0

    def select(
        self, queries: Sequence[SelectionQuery], tools: Sequence[ToolDefinition], repeat: int
    ) -> list[list[Choice]]:
        self.invocations += 1
        index = LexicalIndex.build(tools)
        return [
            [Choice(index.best(query_terms(query.text), query_intent(query.text)), "low")]
            for query in queries
        ]


class SelectionAnswer(BaseModel):
    """The JSON a model answers with."""

    model_config = ConfigDict(extra="forbid")

    tool: str | None = Field(description="The one tool to call for this request, or null if none fits.")
    confidence: Confidence = Field(description="high if the choice is clear, low if unsure.")


INSTRUCTIONS = """You choose which tool an AI agent should call first to handle a user's request.
You do not call tools. Answer with the exact name of the single best tool, or null if no tool fits,
and your confidence: "high" if the choice is clear, "low" if another tool could fit as well.

The tools:

{tools}"""


def describe_tools(tools: Sequence[ToolDefinition]) -> str:
    """The tool list as the model sees it: name, description and parameters with their descriptions."""
    blocks = []
    for tool in tools:
        lines = [f"## {tool.name}", (tool.description or "(no description)").strip()]
        params = schema_properties(tool.input_schema)
        required = set(tool.input_schema.get("required") or [])
        for name, prop in params.items():
            flag = " (required)" if name in required else ""
            text = prop.get("description") if isinstance(prop.get("description"), str) else ""
            lines.append(f"- {name}{flag}: {text}".rstrip(": "))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


class LlmSelector:
    """A model picks the tool through pydantic-ai; unknown tool names count as picking none."""

    CONCURRENCY = 4

    def __init__(self, spec: ProviderSpec, model: Any, *, timeout_s: float = 120.0):
        self.spec = spec
        self.model = model
        self.label = f"llm:{spec}"
        self.timeout_s = timeout_s
        self.invocations = 0

    def select(
        self, queries: Sequence[SelectionQuery], tools: Sequence[ToolDefinition], repeat: int
    ) -> list[list[Choice]]:
        self.invocations += 1
        return asyncio.run(self._select(queries, tools, repeat))

    async def _select(
        self, queries: Sequence[SelectionQuery], tools: Sequence[ToolDefinition], repeat: int
    ) -> list[list[Choice]]:
        from pydantic_ai import Agent, PromptedOutput
        from pydantic_ai.settings import ModelSettings

        agent = Agent(
            self.model,
            output_type=PromptedOutput(SelectionAnswer),
            instructions=INSTRUCTIONS.format(tools=describe_tools(tools)),
            model_settings=ModelSettings(timeout=self.timeout_s),
            retries=1,
        )
        names = {tool.name for tool in tools}
        gate = asyncio.Semaphore(self.CONCURRENCY)

        async def ask(query: SelectionQuery) -> Choice:
            async with gate:
                try:
                    result = await agent.run(query.text)
                except Exception as exc:
                    raise UserError(
                        f"the tool-selection model {self.spec} failed on query {query.source!r}: "
                        f"{type(exc).__name__}: {exc}"
                    ) from exc
            answer = result.output
            tool = answer.tool if answer.tool in names else None
            return Choice(tool, answer.confidence)

        flat = await asyncio.gather(*(ask(query) for query in queries for _ in range(repeat)))
        return [list(flat[i * repeat : (i + 1) * repeat]) for i in range(len(queries))]


def make_selector(spec: ProviderSpec | None, config: Config) -> Selector:
    """The selector for a provider: lexical for none or `demo`, else a model through pydantic-ai."""
    if spec is None or spec.is_demo:
        return LexicalSelector()
    model = build_model(spec, config, purpose="the tool-selection test")
    return LlmSelector(spec, model, timeout_s=config.timeouts.task_s)
