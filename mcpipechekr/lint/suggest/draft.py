"""A model's draft of a rewrite: the phase-0.5 model writes the text, the selection test decides.

With `providers.phase05` a real model, it is shown every tool as the
selection test shows them (`selection.describe_tools`), the bug, the quoted
trace steps and the offline rewrite, and asked for the one text to change,
as JSON `{"text": ...}` (prompted output, so any OpenAI-compatible endpoint
serves it). The draft is then re-scored like the offline rewrite and kept
only when it scores no worse (`orchestrate`); a draft that is empty, far too
long, or trips lint's security scan is dropped with a note.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mcpipechekr.artifacts.description_suggestions import TextEdit
from mcpipechekr.artifacts.tools_snapshot import ToolDefinition
from mcpipechekr.errors import UserError
from mcpipechekr.lint.selection import describe_tools
from mcpipechekr.lint.suggest.evidence import Case

MAX_DRAFT_CHARS = 1200

INSTRUCTIONS = """You rewrite one text of an MCP server's tools: a tool's description or one parameter's.
An AI agent using the server was misled by the current texts; the evidence below shows how.
Write the new text so that an agent picks the right tool and uses the parameter well:
- keep everything true that the current text says;
- say what the tool (or parameter) is for and when to use it, in general words: no names, ids or
  values taken from the example requests;
- describe the tool; do not give orders to the assistant or mention other servers;
- at most 80 words.
Answer with JSON: {"text": "<the whole new text>"}.

The server's tools as the agent saw them:

{tools}"""


class DraftAnswer(BaseModel):
    """The JSON a model answers with."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(description="The whole new text.")


def draft_prompt(case: Case, edit: TextEdit) -> str:
    """The request for one text: which one, why, the quoted steps and the offline rewrite."""
    target = (
        f"the description of parameter `{edit.parameter}` of tool `{edit.tool}`"
        if edit.parameter
        else (f"the description of tool `{edit.tool}`")
    )
    lines = [
        f"Rewrite {target}.",
        f"Current text: {edit.current or '(none)'}",
        f"What went wrong ({case.bug.id}): {case.bug.observed}",
        f"What should have happened: {case.bug.expected}",
        "Trace steps:",
        *(f"- {quote.call}: {quote.why}" for quote in case.quotes),
        f"A rewrite built from the evidence alone (improve on it): {edit.proposed}",
    ]
    return "\n".join(lines)


class ModelDrafter:
    """Drafts texts with a pydantic-ai model; any failure of the model is a UserError naming it."""

    def __init__(self, label: str, model: Any, *, timeout_s: float = 120.0):
        self.label = label
        self.model = model
        self.timeout_s = timeout_s

    def draft(self, case: Case, edit: TextEdit, tools: Sequence[ToolDefinition]) -> str | None:
        """The model's text for `edit`, or None when it answered nothing usable."""
        return asyncio.run(self._draft(case, edit, tools))

    async def _draft(self, case: Case, edit: TextEdit, tools: Sequence[ToolDefinition]) -> str | None:
        from pydantic_ai import Agent, PromptedOutput
        from pydantic_ai.settings import ModelSettings

        agent = Agent(
            self.model,
            output_type=PromptedOutput(DraftAnswer),
            instructions=INSTRUCTIONS.replace("{tools}", describe_tools(tools)),
            model_settings=ModelSettings(timeout=self.timeout_s),
            retries=1,
        )
        try:
            result = await agent.run(draft_prompt(case, edit))
        except Exception as exc:
            raise UserError(
                f"the description model {self.label} failed on {case.bug.id}: {type(exc).__name__}: {exc}"
            ) from exc
        text = " ".join(result.output.text.split())
        return text if 0 < len(text) <= MAX_DRAFT_CHARS else None
