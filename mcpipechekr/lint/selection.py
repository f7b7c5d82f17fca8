"""The tool-selection test: shown every tool and one query, which tool does a selector pick?

Queries are the tasks' prompts that name an `expected_tool`, plus the
`selection_cases` of tasks.yaml. Two selectors:

- `LexicalSelector` (`lexical-bm25`): deterministic BM25 retrieval over each
  tool's name, title, description and parameter names and descriptions, with the
  query's intent phrases expanded (`QUERY_INTENTS`: "how many" adds "count"). It needs
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
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from mcpipechekr.artifacts.tools_snapshot import ToolDefinition
from mcpipechekr.config import Config
from mcpipechekr.errors import UserError
from mcpipechekr.lint._text import schema_properties, tool_text, words
from mcpipechekr.llm import build_model
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.tasks import TaskFile

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


def selection_queries(taskfile: TaskFile | None) -> list[SelectionQuery]:
    """The tasks with an expected tool, then the extra selection cases, in file order."""
    if taskfile is None:
        return []
    queries = [
        SelectionQuery(task.prompt.strip(), task.expected_tool, f"task:{task.task_id}")
        for task in taskfile.tasks
        if task.expected_tool
    ]
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
)
"""Question phrasings whose meaning hides in stop words ("how many" asks for a count): each adds the
words a description would use for that intent. Only the lexical selector uses them, and they are English."""


def query_words(text: str) -> list[str]:
    """The query's content words plus the words of the intents its phrasing expresses."""
    extra = [words_of for pattern, words_of in QUERY_INTENTS if pattern.search(text)]
    return words(text) + words(" ".join(extra))


class LexicalSelector:
    """BM25 (k1=1.2, b=0.75) over tool texts; the top-scoring tool wins, none if no word matches."""

    label = LEXICAL
    K1 = 1.2
    B = 0.75

    def __init__(self) -> None:
        self.invocations = 0

    def select(
        self, queries: Sequence[SelectionQuery], tools: Sequence[ToolDefinition], repeat: int
    ) -> list[list[Choice]]:
        self.invocations += 1
        docs = [Counter(words(tool_text(tool))) for tool in tools]
        lengths = [sum(doc.values()) for doc in docs]
        average = (sum(lengths) / len(lengths)) if lengths else 0.0
        df: Counter[str] = Counter()
        for doc in docs:
            df.update(doc.keys())
        n = len(docs)
        idf = {term: math.log(1 + (n - freq + 0.5) / (freq + 0.5)) for term, freq in df.items()}
        answers = []
        for query in queries:
            scores = [0.0] * n
            for term in set(query_words(query.text)):
                if term not in idf:
                    continue
                for i, doc in enumerate(docs):
                    tf = doc.get(term, 0)
                    if tf:
                        norm = self.K1 * (1 - self.B + self.B * lengths[i] / (average or 1.0))
                        scores[i] += idf[term] * tf * (self.K1 + 1) / (tf + norm)
            best = max(range(n), key=lambda i: (scores[i], -i), default=None)
            tool = tools[best].name if best is not None and scores[best] > 0 else None
            answers.append([Choice(tool, "low")])
        return answers


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
