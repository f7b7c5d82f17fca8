"""The knobs of config.yaml besides the server and the fix: providers, thresholds, timeouts, paths,
check, review, loop and KPI targets.

Kept together because each is only a model with its defaults and limits, read
by the steps that use it; the server and fix sections, which carry behaviour of
their own, have modules of their own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, field_validator

from mcpipechekr._util.fields import MAX_SECONDS, Count, Number, StrictModel
from mcpipechekr._util.safe_read import resolved_file
from mcpipechekr._util.yamlsrc import ConfigFileError, Problem
from mcpipechekr.config.flags import PHASES, provider_flag
from mcpipechekr.config.values import absolute_path
from mcpipechekr.providers import (
    AGENT_CLI_ENV,
    BUILTIN_ENDPOINTS,
    DEMO,
    PROVIDER_ENV,
    EndpointConfig,
    ProviderSpec,
    endpoint_for,
    parse_provider,
)


def _demo() -> ProviderSpec:
    return ProviderSpec(provider=DEMO)


class ProvidersConfig(StrictModel):
    """Which model runs each phase, as provider strings, plus named OpenAI-compatible endpoints."""

    # Declared first: pydantic validates fields in order, so the phase validators can see the endpoint names.
    endpoints: dict[str, EndpointConfig] = Field(
        default_factory=dict,
        description="Named OpenAI-compatible endpoints usable as providers: {name: {base_url, api_key_env}}.",
    )
    phase0: ProviderSpec = Field(
        default_factory=_demo, description="Phase 0 (baseline answers for the tasks)."
    )
    phase05: ProviderSpec = Field(
        default_factory=_demo, description="Phase 0.5 (tool-description evaluation)."
    )
    phase1: ProviderSpec = Field(
        default_factory=_demo, description="Phase 1 (the agent that runs the tasks blind)."
    )
    phase2: ProviderSpec = Field(
        default_factory=_demo, description="Phase 2 (evaluating traces into bug reports)."
    )
    phase3: ProviderSpec = Field(default_factory=_demo, description="Phase 3 (the fix loop).")

    @field_validator(*PHASES, mode="before")
    @classmethod
    def _parse(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, ProviderSpec):
            return value
        if not isinstance(value, str):
            raise ValueError("must be a provider string such as openai/gpt-4o or demo")
        return parse_provider(value, endpoints=info.data.get("endpoints", {}))

    def for_phase(self, phase: str) -> ProviderSpec:
        if phase not in PHASES:
            raise ValueError(f"unknown phase {phase!r} (phases: {', '.join(PHASES)})")
        return getattr(self, phase)

    def endpoint_for(self, spec: ProviderSpec) -> EndpointConfig | None:
        """The OpenAI-compatible endpoint a provider names (configured first, then built-in), else None."""
        return endpoint_for(spec, self.endpoints)

    def parse_flag(self, phase: str, text: str) -> ProviderSpec:
        """Another value of `phase`'s provider flag, parsed against these endpoints.

        For a command that takes its flag more than once (`run` compares
        models): the first value is applied at load like any override, the
        others are parsed here, and a bad one is reported as `load_config`
        reports the first, under the flag's name.
        """
        flag = provider_flag(phase)
        try:
            return parse_provider(text, endpoints=self.endpoints)
        except ValueError as exc:
            raise ConfigFileError([Problem(flag.flag, None, str(exc))]) from None

    def key_env_names(self) -> list[str]:
        """Every API key variable a provider of this config may read: the tables' and the endpoints'."""
        names = {*AGENT_CLI_ENV, *(name for entry in PROVIDER_ENV.values() for name in entry.keys)}
        names.update(
            endpoint.api_key_env
            for endpoint in (*BUILTIN_ENDPOINTS.values(), *self.endpoints.values())
            if endpoint.api_key_env
        )
        return sorted(names)


class ThresholdsConfig(StrictModel):
    """Cut-offs for findings; all are fractions in [0, 1]."""

    tef_precision_warning: Number = Field(
        default=0.7,
        ge=0,
        le=1,
        description="Warn about a tool whose selection precision (description evaluation) is below this; "
        "without a model (the lexical selector) it is a note instead.",
    )
    open_ended_divergence: Number = Field(
        default=0.2,
        ge=0,
        le=1,
        description="Flag an open-ended answer that diverges from the baseline by more than this, "
        "for a person to read (it never fails the answer).",
    )
    overlap: Number = Field(
        default=0.85,
        ge=0,
        le=1,
        description="Report two tools whose descriptions overlap at least this much.",
    )
    misleading_confidence: Number = Field(
        default=0.8,
        ge=0,
        le=1,
        description="Confidence needed before a tool description is reported as misleading.",
    )


class TimeoutsConfig(StrictModel):
    """Wall-clock limits in seconds, and the model-request budget of one attempt."""

    tool_call_s: Number = Field(
        default=60.0, gt=0, le=MAX_SECONDS, description="One tool call to the server under test."
    )
    task_s: Number = Field(default=600.0, gt=0, le=MAX_SECONDS, description="One agent run of one task.")
    phase_s: Number = Field(
        default=3600.0, gt=0, le=MAX_SECONDS, description="One whole phase (all tasks and repetitions)."
    )
    max_requests: Count = Field(
        default=50,
        ge=1,
        le=100_000,
        description="Model requests one Phase 1 attempt may make; reaching it ends it as incomplete.",
    )


class PathsConfig(StrictModel):
    """Where inputs and outputs live; relative paths are taken from config.yaml's folder."""

    tasks: Path = Field(default=Path("tasks.yaml"), description="The task file.")
    runs: Path = Field(default=Path("runs"), description="Folder of run directories.")
    home: Path = Field(default=Path(".mcpipechekr"), description="Working state: workspaces, caches, logs.")

    def resolve(self, base_dir: Path) -> PathsConfig:
        absolute = {
            name: Path(absolute_path(str(getattr(self, name)), base_dir)) for name in type(self).model_fields
        }
        # the task file keeps its own name (a link is not followed here): messages name what the user wrote
        absolute["tasks"] = resolved_file(base_dir / self.tasks.expanduser())
        return PathsConfig(**absolute)


class CheckConfig(StrictModel):
    """`mcpipechekr check`: what the server should offer, the cases to run, and response budgets."""

    cases: Path | None = Field(
        default=None,
        description="Cases file for the functional layer (e.g. cases.yaml); none: layer skipped.",
    )
    expected_failures: Path | None = Field(
        default=None, description="YAML list of check or case ids allowed to fail, each with a reason."
    )
    call_timeout_s: Number = Field(
        default=30.0, gt=0, le=MAX_SECONDS, description="Limit for each call a check makes."
    )
    expected_tool_count: Count | None = Field(
        default=None,
        ge=0,
        le=100_000,
        description="How many tools the server should list; none: not checked.",
    )
    expected_tools: list[str] = Field(
        default_factory=list, description="Tool names the server must list (its canonical tool set)."
    )
    budget_tokens: Count = Field(
        default=4000,
        gt=0,
        le=100_000_000,
        description="Default response budget per tool call, in estimated tokens.",
    )
    tool_budgets: dict[str, Annotated[Count, Field(gt=0, le=100_000_000)]] = Field(
        default_factory=dict, description="Per-tool response budgets in estimated tokens, by tool name."
    )
    read_only: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=list,
        description="Tools the server's author trusts to only read although it does not annotate them: "
        "check, baseline and propose call them as if annotated readOnlyHint: true (never one annotated "
        "destructiveHint: true or readOnlyHint: false). Written by `check --trust-read-only` and `init`.",
    )
    synthesize: bool = Field(
        default=True,
        description="Synthesize arguments for PC-10 (schema, the server's paths, other tools' results) "
        "until a read-only tool answers; false: one call with a case's or minimal arguments.",
    )
    synthesis_max_calls: Count = Field(
        default=8, ge=1, le=100, description="Most argument sets PC-10 tries per tool (synthesis on)."
    )
    synthesis_time_s: Number = Field(
        default=5.0,
        gt=0,
        le=MAX_SECONDS,
        description="Seconds after which PC-10 starts no further argument set for a tool.",
    )

    def resolve(self, base_dir: Path) -> CheckConfig:
        return self.model_copy(
            update={
                name: Path(absolute_path(str(getattr(self, name)), base_dir))
                for name in ("cases", "expected_failures")
                if getattr(self, name) is not None
            }
        )


class ReviewConfig(StrictModel):
    """The human review between the evaluation and the fix."""

    web: bool = Field(
        default=False,
        description="Decide in the browser: the loop's review serves the review page on 127.0.0.1 and "
        "waits for the decision made there (as `doit loop --web-review`).",
    )


LoopStop = Literal["no_server_bugs", "kpis_met"]
"""When the loop ends by itself: `no_server_bugs` when a run has no server-side bug left to approve (or a
fix step commits nothing), `kpis_met` also as soon as a run meets every configured KPI target."""


class LoopConfig(StrictModel):
    """The reviewed fix loop."""

    max_iterations: Count = Field(
        default=3, ge=1, le=1000, description="Most evaluate-fix-verify rounds in one `loop`."
    )
    stop_when: LoopStop = Field(
        default="no_server_bugs",
        description="`no_server_bugs`: the loop ends, before the review, at a run with no server-side bug "
        "left to approve (agent-behaviour items have no server-side fix), or when a fix step commits "
        "nothing; `kpis_met`: it also ends, before the review, at the first run that meets every "
        "configured `kpi` target.",
    )


class KpiConfig(StrictModel):
    """Targets of the key figures every report marks met / not met (docs/kpi.md); `null` turns one off.

    Why targets rather than figures alone: a loop can only say it is done, and a
    reader can only tell good from bad, against a number agreed beforehand.
    """

    call_efficiency_ratio: Number | None = Field(
        default=1.3,
        gt=0,
        le=1000,
        description="Most tool calls made per call the baseline needs (calls made / baseline minimum "
        "calls, over attempts of tasks with a known minimum).",
    )
    correctness: Number | None = Field(
        default=0.95,
        ge=0,
        le=1,
        description="Least share of decided answers that are correct (checked or judged correct / "
        "decided attempts).",
    )
    selection_precision: Number | None = Field(
        default=0.85,
        ge=0,
        le=1,
        description="Least tool-selection precision of the lint's selection test (tef_report.json: the "
        "mean precision of the tools the selector picked).",
    )
    gap_cost_falling: bool | None = Field(
        default=True,
        description="`true`: the token cost of the gap (every bug's gap x occurrences) must fall run "
        "after run, or be 0; `null` or `false` turns it off.",
    )
    regression_rate: Number | None = Field(
        default=0.0,
        ge=0,
        le=1,
        description="Most regressions per fix claimed (closed findings that failed again), over the "
        "session's runs.",
    )
