"""runs/{run-id}/kpi.json: the run's key figures against the targets of config.yaml's `kpi:` section.

Written by the evaluation, after the findings hand-off, so every later reader
(the review, the session summary, report.html, `compare`, the loop deciding
whether to stop) reads one set of figures instead of recomputing them with
whatever targets and findings home it happens to have. Each figure says how it
was computed (`basis`); a figure that cannot be computed (no baseline minimum,
no lint run, no fix claimed yet) is `not_measured` with no value, never a
made-up number. The trend is against the run whose fixes this one was traced
after, as far as that run has a kpi.json.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, Field, NonNegativeInt, PositiveInt

from mcpipechekr.artifacts._base import VERSION_DESCRIPTION, ArtifactModel, FormatVersion, RunId

KpiName = Literal[
    "call_efficiency_ratio", "correctness", "selection_precision", "gap_cost_falling", "regression_rate"
]
KpiStatus = Literal["met", "not_met", "not_measured", "off"]
KpiDirection = Literal["at_most", "at_least", "below"]
KpiTrend = Literal["better", "worse", "same"]


class KpiFigure(ArtifactModel):
    """One key figure of a run, its target and whether the run meets it."""

    name: KpiName = Field(description="Which figure (docs/kpi.md gives each formula).")
    value: float | None = Field(
        default=None, ge=0.0, description="The figure; absent when it could not be measured or is off."
    )
    target: float | None = Field(
        default=None,
        ge=0.0,
        description="The target from config.yaml's `kpi:`; for `gap_cost_falling` the previous run's gap "
        "cost, which the figure must fall below (or be 0). Absent when off or when there is no previous run.",
    )
    direction: KpiDirection = Field(
        description="How the value meets the target: `at_most`, `at_least`, or `below` (strictly, or 0)."
    )
    status: KpiStatus = Field(
        description="`met`, `not_met`, `not_measured` (no value: see `basis`) or `off` (`null` in config)."
    )
    basis: str = Field(
        min_length=1, description="How the value was computed, with its counts, or why it was not."
    )
    previous: float | None = Field(
        default=None, ge=0.0, description="The value in the previous run of the session, when it had one."
    )
    trend: KpiTrend | None = Field(
        default=None,
        description="`better`, `worse` or `same` than `previous` (lower is better for `at_most` and "
        "`below` figures); absent without both values.",
    )


class KpiReport(ArtifactModel):
    """runs/{run-id}/kpi.json: the key figures of one run, with their targets and trends."""

    version: FormatVersion = Field(default=1, description=VERSION_DESCRIPTION)
    run_id: RunId = Field(description="The run these figures are of.")
    computed_at: AwareDatetime = Field(description="When they were computed (after the evaluation).")
    previous_run_id: RunId | None = Field(
        default=None,
        description="The run whose fixes this one was traced after: what the trends compare with.",
    )
    loop: PositiveInt = Field(
        default=1, description="Which loop of the session this run is (1 for a run no fix led to)."
    )
    gap_token_cost: NonNegativeInt = Field(
        description="Token cost of the gap of the run: every bug's token_cost_of_gap x occurrences."
    )
    kpis: list[KpiFigure] = Field(description="Every key figure, in the order of docs/kpi.md.")

    def figure(self, name: KpiName) -> KpiFigure | None:
        """The figure called `name`, if the file has it."""
        return next((kpi for kpi in self.kpis if kpi.name == name), None)

    def all_met(self) -> bool:
        """True when every figure that is not off is met, and at least one is on: what `loop.stop_when:
        kpis_met` waits for. A figure not measured is not met, so a run cannot pass on what nobody
        measured."""
        on = [kpi for kpi in self.kpis if kpi.status != "off"]
        return bool(on) and all(kpi.status == "met" for kpi in on)
