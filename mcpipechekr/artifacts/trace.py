"""runs/{run-id}/traces/*.json: the one trace format, whatever ran the agent.

Why one format: the native agent, opencode, Claude Code, the scripted demo and
imported logs must all be evaluated by the same analyzer and priced the same
way. A trace records the exact prompt, every model turn with its token usage
(reported by the provider, or estimated when it was not, and labelled so), and
every tool call with its arguments, the MCP result as the model saw it, and its
size as the model read it (a client's preview of a large result is priced as the
preview; the whole result's size is kept beside it).

Sizes of tool results are measured in one place, ``measure_result`` (the rule is
in ``artifacts/tool_result.py``), and token
estimates always come from ``mcpipechekr._util.tokens.estimate_tokens``, so
the observed and the optimal call sequences of a bug are priced alike.

``totals`` is derived from ``steps``: ``write_trace`` recomputes it, and a file
whose totals disagree with its steps is rejected on reading.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    Field,
    JsonValue,
    NonNegativeInt,
    PositiveInt,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from mcpipechekr._util.tokens import estimate_tokens
from mcpipechekr.artifacts._base import VERSION_DESCRIPTION, ArtifactModel, FormatVersion
from mcpipechekr.artifacts.atomic import read_model, write_model
from mcpipechekr.artifacts.rundir import RunDir
from mcpipechekr.artifacts.tool_result import seen_size

UsageSource = Literal["reported", "estimated"]
Runner = Literal["native", "opencode", "claude-code", "demo", "import"]
TraceStatus = Literal["completed", "error", "timeout", "incomplete", "errored"]


class Usage(ArtifactModel):
    """Tokens of one model turn, and whether the provider reported them or they were estimated."""

    input_tokens: NonNegativeInt = Field(default=0, description="Prompt tokens of this turn.")
    output_tokens: NonNegativeInt = Field(default=0, description="Completion tokens of this turn.")
    cache_read_tokens: NonNegativeInt = Field(
        default=0, description="Input tokens served from a prompt cache."
    )
    cache_write_tokens: NonNegativeInt = Field(
        default=0, description="Input tokens written to a prompt cache."
    )
    source: UsageSource = Field(
        description="`reported` by the provider, or `estimated` with the documented 4-bytes-per-token rule."
    )

    @classmethod
    def estimated(cls, prompt: Any, completion: Any) -> Usage:
        """Usage for a provider that reports none: both sides estimated the one documented way."""
        return cls(
            input_tokens=estimate_tokens(prompt),
            output_tokens=estimate_tokens(completion),
            source="estimated",
        )


class ModelTurn(ArtifactModel):
    """One response of the model: its text, its visible reasoning, and what it cost."""

    kind: Literal["model"] = Field(default="model", description="Step type tag: `model`.")
    index: NonNegativeInt = Field(description="Position of the step in the trace, from 0.")
    text: str = Field(default="", description="Text the model produced in this turn.")
    thinking: list[str] = Field(default_factory=list, description="Reasoning blocks the provider exposed.")
    usage: Usage = Field(description="Token usage of this turn.")
    request_id: str | None = Field(default=None, description="Provider's request id, for support tickets.")


_PREVIEW_FIELDS = ("result_preview", "result_bytes_full", "result_tokens_full")


class ToolCall(ArtifactModel):
    """One MCP tool call as the agent made it and as the server answered it."""

    kind: Literal["tool_call"] = Field(default="tool_call", description="Step type tag: `tool_call`.")
    index: NonNegativeInt = Field(description="Position of the step in the trace, from 0.")
    call_id: str = Field(description="The model's id for the call, linking it to its request.")
    tool: str = Field(min_length=1, description="Tool name.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Arguments the agent passed.")
    result_content: list[dict[str, Any]] = Field(
        default_factory=list,
        description="MCP content blocks returned, as JSON objects (`type`, `text`, ...).",
    )
    structured_content: JsonValue | None = Field(
        default=None, description="MCP structured content returned, if any."
    )
    is_error: bool = Field(
        default=False, description="True if the call failed (an MCP error result or none)."
    )
    error_text: str | None = Field(default=None, description="The error message the agent saw, if it failed.")
    latency_ms: float = Field(ge=0.0, description="Wall time from request to result, in milliseconds.")
    result_bytes: NonNegativeInt = Field(
        description="Size of the result as the model read it: its content blocks (JSON text compact), "
        "structured content only when there were none, the client's preview when it showed one "
        "(see `artifacts/tool_result.py`)."
    )
    result_tokens_estimated: NonNegativeInt = Field(
        description="Estimated tokens of that result as the model read it: what pricing uses."
    )
    result_preview: bool = Field(
        default=False,
        description="True when the client showed the model a preview or a truncated result "
        "instead of the whole one; `result_content` is then what it showed.",
    )
    result_bytes_full: NonNegativeInt | None = Field(
        default=None,
        description="Size of the whole result the server returned, read the same way, when the model "
        "was shown a preview; absent when it saw the whole result.",
    )
    result_tokens_full: NonNegativeInt | None = Field(
        default=None, description="Estimated tokens of the whole result, when the model saw a preview."
    )

    @model_serializer(mode="wrap")
    def _whole_result_only_when_previewed(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Leave the preview fields out when the model saw the whole result.

        A trace without a preview then has the fields of earlier versions only, so
        earlier versions of the tool (which refuse unknown fields) still read it.
        """
        data = handler(self)
        if not self.result_preview and isinstance(data, dict):
            for key in _PREVIEW_FIELDS:
                data.pop(key, None)
        return data

    @property
    def whole_result_tokens(self) -> int:
        """Estimated tokens of the whole result the server returned, whatever the model was shown."""
        return self.result_tokens_estimated if self.result_tokens_full is None else self.result_tokens_full


Step = Annotated[ModelTurn | ToolCall, Field(discriminator="kind")]


class TraceTotals(ArtifactModel):
    """Sums over the steps, for reports that compare many traces."""

    model_turns: NonNegativeInt = Field(default=0, description="Number of model turns.")
    tool_calls: NonNegativeInt = Field(default=0, description="Number of tool calls.")
    errors: NonNegativeInt = Field(default=0, description="Tool calls that failed.")
    input_tokens: NonNegativeInt = Field(default=0, description="Input tokens over all model turns.")
    output_tokens: NonNegativeInt = Field(default=0, description="Output tokens over all model turns.")
    total_tokens: NonNegativeInt = Field(default=0, description="input_tokens + output_tokens.")
    usage_source: Literal["reported", "estimated", "mixed"] = Field(
        default="reported",
        description="`reported` if every turn's usage was reported (or there were none), "
        "`estimated` if every turn's was estimated, else `mixed`.",
    )


class Trace(ArtifactModel):
    """runs/{run-id}/traces/<task>__<provider>__rNNN.json: one agent attempt at one task."""

    version: FormatVersion = Field(default=1, description=VERSION_DESCRIPTION)
    task_id: str = Field(min_length=1, description="Id of the task in tasks.yaml.")
    repetition: PositiveInt = Field(default=1, description="Which attempt at the task this is, from 1.")
    provider: str = Field(min_length=1, description="Provider as configured, e.g. `openai/gpt-4o` or `demo`.")
    model: str | None = Field(default=None, description="Model name the provider reported, if it differs.")
    runner: Runner = Field(description="What ran the agent.")
    prompt: str = Field(description="The exact text sent to the agent.")
    started_at: AwareDatetime = Field(description="When the attempt started.")
    ended_at: AwareDatetime | None = Field(default=None, description="When it ended; absent if it never did.")
    status: TraceStatus = Field(
        description="`completed` (gave a final answer), `error` (the agent or its runner failed), "
        "`timeout`, `incomplete` (cut short), or `errored`: the agent never reached a working server (it "
        "did not start or connect, twice), an infrastructure failure that is never judged as an answer."
    )
    status_reason: str | None = Field(default=None, description="Why it did not complete, in one line.")
    failed_starts: list[str] = Field(
        default_factory=list,
        description="Why each earlier try of this attempt never had a working server (it did not start "
        "or connect), oldest first; an `errored` trace lists every try. Absent when the first try worked.",
    )
    cut_by_harness: bool = Field(
        default=False,
        description="True when the harness cut the attempt short (Ctrl-C, the phase's timeout, another "
        "attempt's server halt), not the agent, its model or the server: no answer, never judged.",
    )
    steps: list[Step] = Field(default_factory=list, description="Model turns and tool calls, in order.")
    final_answer: str | None = Field(default=None, description="The agent's final answer, if it gave one.")
    totals: TraceTotals = Field(
        default_factory=TraceTotals, description="Sums over the steps; computed when omitted."
    )

    def compute_totals(self) -> TraceTotals:
        """Sum the steps; the one definition of a trace's cost."""
        turns = [step for step in self.steps if isinstance(step, ModelTurn)]
        calls = [step for step in self.steps if isinstance(step, ToolCall)]
        sources = {turn.usage.source for turn in turns}
        source: Literal["reported", "estimated", "mixed"] = (
            "mixed" if len(sources) > 1 else "estimated" if sources == {"estimated"} else "reported"
        )
        input_tokens = sum(turn.usage.input_tokens for turn in turns)
        output_tokens = sum(turn.usage.output_tokens for turn in turns)
        return TraceTotals(
            model_turns=len(turns),
            tool_calls=len(calls),
            errors=sum(1 for call in calls if call.is_error),
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            total_tokens=input_tokens + output_tokens,
            usage_source=source,
        )

    @model_validator(mode="after")
    def _consistent(self) -> Trace:
        for position, step in enumerate(self.steps):
            if step.index != position:
                raise ValueError(
                    f"step {position} has index {step.index}; indexes count 0, 1, 2, ... in order"
                )
        if self.ended_at is not None and self.ended_at < self.started_at:
            raise ValueError("`ended_at` is before `started_at`")
        computed = self.compute_totals()
        if "totals" not in self.model_fields_set:
            self.totals = computed
        elif self.totals != computed:
            raise ValueError(
                f"`totals` does not match the steps (they give {computed.model_dump()}); "
                "fix them or remove `totals` to have it computed"
            )
        return self


def measure_result(content: list[dict[str, Any]], structured_content: Any = None) -> tuple[int, int]:
    """(bytes, estimated tokens) of a tool result as a model reads it (`tool_result.seen_size`).

    Every runner and importer measures through here so result sizes compare across clients.
    """
    return seen_size(content, structured_content)


def _as_json(block: Any) -> dict[str, Any]:
    if isinstance(block, BaseModel):
        return block.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dict(block)


def tool_call_from_result(
    *,
    index: int,
    call_id: str,
    tool: str,
    arguments: dict[str, Any],
    content: list[Any],
    structured_content: Any = None,
    is_error: bool = False,
    latency_ms: float,
    error_text: str | None = None,
    shown: list[Any] | None = None,
    full_size: tuple[int, int] | None = None,
) -> ToolCall:
    """Build a ToolCall from a tool result: the one normalisation every runner and importer uses.

    `content` and `structured_content` are the result (content blocks as models or
    dicts). When the client showed the model something else instead, a preview of a
    result too large for it, `shown` holds those blocks: they become the call's
    `result_content` and its price, and the whole result's size is kept in
    `result_bytes_full`, measured from `content` and `structured_content` or given
    as `full_size` (bytes, tokens) when the client no longer has the result.
    Sizes are as a model reads them (`measure_result`). For an error result without
    an explicit ``error_text``, the text blocks are taken as the message the agent saw.
    """
    blocks = [_as_json(block) for block in content]
    if isinstance(structured_content, BaseModel):
        structured_content = structured_content.model_dump(mode="json", by_alias=True)
    full: tuple[int, int] | None = None
    if shown is not None:
        full = full_size or measure_result(blocks, structured_content)
        blocks = [_as_json(block) for block in shown]
    size, tokens = measure_result(blocks, structured_content if shown is None else None)
    if is_error and error_text is None:
        texts = [block["text"] for block in blocks if block.get("type") == "text" and "text" in block]
        error_text = "\n".join(texts) or None
    return ToolCall(
        index=index,
        call_id=call_id,
        tool=tool,
        arguments=arguments,
        result_content=blocks,
        structured_content=structured_content,
        is_error=is_error,
        error_text=error_text,
        latency_ms=latency_ms,
        result_bytes=size,
        result_tokens_estimated=tokens,
        result_preview=shown is not None,
        result_bytes_full=full[0] if full else None,
        result_tokens_full=full[1] if full else None,
    )


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(text: str) -> str:
    """A file-name-safe slug: `openai/gpt-4o` -> `openai_gpt-4o`; never empty, never hidden."""
    slug = _UNSAFE.sub("_", text).strip("._") or "_"
    return slug


def trace_path(run_dir: RunDir | Path, task_id: str, provider: str, repetition: int) -> Path:
    """Where the trace of one attempt lives: `traces/<task>__<provider>__r<NNN>.json`.

    The repetition is zero-padded so traces list in order.
    """
    if repetition < 1:
        raise ValueError("repetitions count from 1")
    traces = run_dir.traces if isinstance(run_dir, RunDir) else Path(run_dir) / "traces"
    return traces / f"{safe_name(task_id)}__{safe_name(provider)}__r{repetition:03d}.json"


def write_trace(run_dir: RunDir | Path, trace: Trace) -> Path:
    """Write a trace (totals recomputed from its steps) to its place in the run; returns the path."""
    final = trace.model_copy(update={"totals": trace.compute_totals()})
    path = trace_path(run_dir, trace.task_id, trace.provider, trace.repetition)
    return write_model(path, final)


def read_trace(path: str | Path) -> Trace:
    """Read and validate one trace file; problems name the file, line and field.

    Validated the fast way (see `parse_model`): evaluating a run reads thousands of
    traces, and validating their structured results as parsed Python objects was
    much of its reading time.
    """
    return read_model(path, Trace, fast=True)


def list_traces(run_dir: RunDir | Path) -> list[Path]:
    """The trace files of a run, in name order (task, provider, repetition)."""
    traces = run_dir.traces if isinstance(run_dir, RunDir) else Path(run_dir) / "traces"
    if not traces.is_dir():
        return []
    return sorted(path for path in traces.glob("*.json") if not path.name.startswith("."))
