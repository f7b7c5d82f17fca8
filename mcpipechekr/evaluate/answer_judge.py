"""The phase-2 model as judge of open-ended answers: right or wrong, with a reason.

Why a model: an open-ended answer (a summary, a history) is right in many
wordings, and no rule over words can tell a correct answer in other words from
a wrong one; lexical overlap failed correct answers. So each completed
open-ended answer is shown to the phase-2 model with the task and the
baseline's reference material, and the model says whether it answers the task
correctly and completely. Without a phase-2 model (`demo`) nothing judges it:
the answer is `unjudged`, neither passed nor failed.

Blind spots: the judge sees the reference material the baseline recorded (cut
to `REFERENCE_CHARS`), not what the agent read; a fact the agent found that the
reference lacks may be judged unsupported. A judge that fails (network, bad
output) leaves the answer unjudged and adds a note.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import BaseModel, Field

from mcpipechekr.config import Config
from mcpipechekr.providers import ProviderSpec

REFERENCE_CHARS = 30_000
"""How much of the baseline's reference material the judge is shown."""

JUDGE_INSTRUCTIONS = """You grade an AI agent's answer to a user's task against reference material
recorded from the same data source. The answer may use other words, another order or a shorter form:
that is fine. It is wrong when it states facts the reference contradicts, misses what the task
explicitly asks for, or does not answer the task. Answer with `correct` (true or false) and a
one-sentence `reason`."""


class AnswerVerdict(BaseModel):
    """The judge's answer about one final answer."""

    correct: bool = Field(description="Whether the answer answers the task correctly and completely.")
    reason: str = Field(description="One sentence saying why.")


@dataclass
class AnswerJudge:
    """Judges open-ended answers with a pydantic-ai model (the phase-2 provider, or a scripted one)."""

    model: Any
    label: str
    timeout_s: float = 120.0

    @classmethod
    def for_provider(cls, spec: ProviderSpec, config: Config) -> AnswerJudge:
        """The judge on a configured provider (`llm.build_model`); `demo` is refused there."""
        from mcpipechekr.llm import build_model

        model = build_model(spec, config, purpose="judging open-ended answers")
        return cls(model, str(spec), config.timeouts.task_s)

    def judge(self, prompt: str, reference: Any, answer: str) -> AnswerVerdict:
        """The verdict on one answer; raises what the model call raises."""
        from pydantic_ai import Agent, PromptedOutput
        from pydantic_ai.settings import ModelSettings

        agent = Agent(
            self.model,
            output_type=PromptedOutput(AnswerVerdict),
            instructions=JUDGE_INSTRUCTIONS,
            model_settings=ModelSettings(timeout=self.timeout_s),
            retries=1,
        )
        material = orjson.dumps(reference, default=str).decode()[:REFERENCE_CHARS]
        question = f"Task: {prompt}\n\nReference material:\n{material}\n\nThe agent's answer:\n{answer}"
        return asyncio.run(agent.run(question)).output
