"""check_report.json: what `mcpipechekr check` found, one entry per check with its evidence.

Every check has a stable id (`PC-…` protocol, `FC-…` functional, `QC-…` quality)
so CI history, expected-failure lists and docs/check.md can refer to it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AwareDatetime, Field

from mcpipechekr.artifacts._base import VERSION_DESCRIPTION, ArtifactModel, FormatVersion

CheckStatus = Literal["PASS", "FAIL", "WARN", "SKIP"]
Layer = Literal["protocol", "functional", "quality"]
LAYERS: tuple[Layer, ...] = ("protocol", "functional", "quality")


class CheckResult(ArtifactModel):
    """One check's verdict with the reason a person needs to act on it."""

    id: str = Field(
        min_length=1,
        description="Stable id: the check's id (`PC-07`), suffixed with the tool or case it ran on "
        "(`PC-07:query_email_database`, `FC:find-by-sender`).",
    )
    name: str = Field(min_length=1, description="One-line name of what is checked.")
    layer: Layer = Field(description="protocol, functional or quality.")
    group: str = Field(min_length=1, description="Heading it is reported under, e.g. Discovery, Tool calls.")
    status: CheckStatus = Field(description="PASS, FAIL, WARN or SKIP.")
    reason: str = Field(default="", description="Why it has this status: evidence, or why it was skipped.")
    tool: str | None = Field(default=None, description="The tool it concerns, if any.")
    duration_ms: float = Field(default=0.0, ge=0, description="Wall time the check took.")
    expected_failure: str | None = Field(
        default=None,
        description="Set when the id is listed in --expected-failures: the reason given there. Such a "
        "FAIL does not fail the run; such a PASS does (the list is stale).",
    )
    details: dict[str, Any] = Field(
        default_factory=dict, description="Machine-readable evidence (sizes, pointers, values seen)."
    )


class ResponseSize(ArtifactModel):
    """How much of an agent's context one tool response takes."""

    tool: str = Field(min_length=1, description="The tool that answered.")
    source: str = Field(description="What produced the call: `generated` arguments or a case id.")
    chars: int = Field(ge=0, description="Characters of the response's text and structured content.")
    tokens_estimated: int = Field(ge=0, description="Estimated tokens (mcpipechekr._util.tokens).")
    budget_tokens: int = Field(ge=0, description="The budget that applied to this tool.")
    over_budget: bool = Field(description="True when tokens_estimated exceeds budget_tokens.")


ReachStatus = Literal["reached", "not_reached", "failed", "needs_network", "no_arguments", "not_called"]


class ToolCoverage(ArtifactModel):
    """Whether PC-10 got one successful answer from a tool, with what, or the error it got instead."""

    tool: str = Field(min_length=1, description="The tool.")
    status: ReachStatus = Field(
        description="reached (a result without isError), not_reached (every argument set was refused "
        "with a clear error), failed (a crash, hang, malformed or unhandled-error answer: PC-10 FAIL), "
        "needs_network (an open-world tool that could not reach its host), no_arguments (none could be "
        "made from its inputSchema), not_called (a tool check may not call, or the server was lost)."
    )
    calls: int = Field(default=0, ge=0, description="Calls made to reach it.")
    arguments: dict[str, Any] | None = Field(
        default=None, description="The arguments of the successful call (reached), or of the last call."
    )
    sources: dict[str, str] = Field(
        default_factory=dict,
        description="Where each of those arguments came from: `schema enum`, `schema example`, `server "
        "command line`, `resource`, `result of <tool>`, `case <id>`, `minimal`, ….",
    )
    error: str | None = Field(default=None, description="The last error, when it was not reached.")


class Coverage(ArtifactModel):
    """How many of the tools check may call answered a call with synthesized arguments (PC-10)."""

    callable_tools: int = Field(
        ge=0, description="Tools check may call: annotated read-only and not destructive, or opted in."
    )
    reached: int = Field(ge=0, description="Of those, the tools that answered a call without isError.")
    tools: list[ToolCoverage] = Field(
        default_factory=list, description="One entry per tool, in tools/list order."
    )


TrustSource = Literal["--trust-read-only", "config.yaml check.read_only"]


class TrustedTool(ArtifactModel):
    """A tool without a read-only annotation that check called because the server's author trusts it."""

    tool: str = Field(min_length=1, description="The tool.")
    by: TrustSource = Field(
        description="Who trusted it: `--trust-read-only` on the command line, or config.yaml's "
        "`check.read_only`."
    )
    recorded: bool = Field(
        default=False,
        description="True when this check added it to config.yaml's `check.read_only` (a project folder).",
    )


class RefusedTrust(ArtifactModel):
    """A tool named as read-only that check still did not call, and why."""

    tool: str = Field(min_length=1, description="The tool.")
    by: TrustSource = Field(description="Where it was named.")
    reason: str = Field(
        description="Why: its annotations say it writes (they win), or the server does not list it."
    )


class ReadOnlyCandidate(ArtifactModel):
    """A tool not annotated read-only whose name, description and parameters all read as only reading."""

    tool: str = Field(min_length=1, description="The tool.")
    why: str = Field(
        description="What makes it look read-only (a suggestion only: nothing calls it on this)."
    )


class CheckSummary(ArtifactModel):
    """Counts for the summary line and CI badges."""

    total: int = Field(ge=0, description="Checks run.")
    passed: int = Field(ge=0, description="PASS.")
    failed: int = Field(ge=0, description="FAIL, not counting expected failures.")
    warned: int = Field(ge=0, description="WARN.")
    skipped: int = Field(ge=0, description="SKIP.")
    expected_failures: int = Field(ge=0, description="FAIL results listed as expected failures.")
    stale_expected_failures: int = Field(
        ge=0, description="Listed expected failures that passed: the list needs updating."
    )


class CheckReport(ArtifactModel):
    """check_report.json: one `mcpipechekr check` run against one server."""

    version: FormatVersion = Field(default=1, description=VERSION_DESCRIPTION)
    server: str = Field(min_length=1, description="The server's short name.")
    target: str = Field(description="How it was reached (stdio command or URL), secrets redacted.")
    started_at: AwareDatetime = Field(description="When the check started.")
    finished_at: AwareDatetime = Field(description="When it finished.")
    layers: list[Layer] = Field(description="The layers that ran.")
    checks: list[CheckResult] = Field(default_factory=list, description="Every verdict, in run order.")
    sizes: list[ResponseSize] = Field(
        default_factory=list, description="Response sizes, largest first (quality layer)."
    )
    coverage: Coverage | None = Field(
        default=None,
        description="Which tools PC-10 reached and with what arguments; none when neither the protocol "
        "nor the quality layer called tools.",
    )
    trusted_read_only: list[TrustedTool] = Field(
        default_factory=list,
        description="Tools called as read-only on the author's word, not their annotations, and by whom.",
    )
    refused_trust: list[RefusedTrust] = Field(
        default_factory=list, description="Tools named as read-only that were still not called, with why."
    )
    read_only_candidates: list[ReadOnlyCandidate] = Field(
        default_factory=list,
        description="Tools neither annotated nor trusted read-only that look read-only: the author may "
        "trust them (`check --trust-read-only`); none is called until then.",
    )
    summary: CheckSummary = Field(description="Counts by status.")
    exit_code: Literal[0, 1, 2] = Field(
        description="0 all passed (warnings allowed), 1 a check failed or an expected failure is stale, "
        "2 bad input or unreachable server."
    )
