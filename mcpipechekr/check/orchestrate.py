"""One `check` run: read the inputs, start the server, run the layers, judge the expected failures.

`run_check` is the library call behind `mcpipechekr check` and the doit graph.
Bad input (config, cases file, expected-failures list) and a server that cannot
be started raise `UserError`s (exit 2) before or instead of a report; anything
the server does wrong once it is up becomes a verdict in the report, so the run
always ends with one. Inputs are read before the server starts, so a typo in a
cases file costs no server start.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from mcpipechekr.artifacts._base import utc_now
from mcpipechekr.artifacts.atomic import write_model
from mcpipechekr.artifacts.check_report import (
    LAYERS,
    CheckReport,
    CheckResult,
    CheckSummary,
    Coverage,
    Layer,
    ResponseSize,
)
from mcpipechekr.artifacts.rundir import RunDir
from mcpipechekr.check.cases import CasesFile, load_cases
from mcpipechekr.check.context import CheckContext
from mcpipechekr.check.expected import apply_expected_failures, load_expected_failures, matches
from mcpipechekr.check.functional import run_functional
from mcpipechekr.check.protocol import run_protocol
from mcpipechekr.check.quality import run_quality
from mcpipechekr.check.reach import coverage_of
from mcpipechekr.check.synthesis import case_arguments
from mcpipechekr.check.trust import (
    FLAG,
    parse_tool_names,
    read_only_candidates,
    record_read_only,
    resolve_trust,
)
from mcpipechekr.config import Config
from mcpipechekr.server.lifecycle import server_under_test
from mcpipechekr.server.logs import describe_target
from mcpipechekr.server.workspace import prepare_repo

STALE_GROUP = "Expected failures"


def run_check(
    config: Config,
    *,
    layers: Iterable[Layer] = LAYERS,
    cases_path: Path | None = None,
    expected_failures_path: Path | None = None,
    call_timeout_s: float | None = None,
    log_path: Path | None = None,
    progress: Callable[[str], None] | None = None,
    trust_read_only: Sequence[str] = (),
    record_trust: bool = False,
) -> CheckReport:
    """Check the configured server and return the report (whose `exit_code` the CLI exits with).

    `cases_path`, `expected_failures_path` and `call_timeout_s` default to
    config.check's. `progress` is told what runs now. The check starts and
    stops its own server. Raises UserError (a ServerHalt included) when an
    input is bad or the server cannot be started.

    `trust_read_only`: tool names (comma-separated lists allowed) the server's
    author trusts to only read, for this check on top of config.check.read_only
    (check/trust.py); a name the server does not list is a UserError. With
    `record_trust`, they are also added to the config file's check.read_only,
    for every later check, baseline and propose.
    """
    selected = [layer for layer in LAYERS if layer in set(layers)]
    cases_path = cases_path or config.check.cases
    expected_path = expected_failures_path or config.check.expected_failures
    cases: CasesFile | None = load_cases(cases_path) if cases_path is not None else None
    expected = load_expected_failures(expected_path) if expected_path is not None else {}
    timeout_s = call_timeout_s or config.check.call_timeout_s

    started_at = utc_now()
    prepare_repo(config.server)
    if progress is not None:
        progress(f"starting {config.server.name}")
    sizes: list[ResponseSize] = []
    with server_under_test(config, log_path, share=True) as server:
        ctx = CheckContext(config=config, server=server, call_timeout_s=timeout_s, progress=progress)
        if cases is not None:
            ctx.opted_in |= cases.opt_in_tools
        ctx.use_tools(server.list_tools(timeout_s=timeout_s))
        trusted, refused = resolve_trust(
            ctx.tools, flag=parse_tool_names(trust_read_only), config=config.check.read_only
        )
        ctx.read_only = {entry.tool for entry in trusted}
        if record_trust and config.source is not None:
            recorded = set(record_read_only(config.source, [e.tool for e in trusted if e.by == FLAG]))
            trusted = [entry.model_copy(update={"recorded": entry.tool in recorded}) for entry in trusted]
        if "protocol" in selected:
            run_protocol(ctx, arguments_for=case_arguments(cases))
        if "functional" in selected:
            if cases is None:
                ctx.record(
                    "FC",
                    "functional cases",
                    "functional",
                    "Cases",
                    "SKIP",
                    "no cases file: pass --cases PATH or set check.cases in config.yaml",
                )
            else:
                run_functional(ctx, cases)
        if "quality" in selected:
            sizes = run_quality(ctx, cases, arguments_for=case_arguments(cases))
        results = ctx.results
        coverage = coverage_of(ctx.coverage, ctx.tools)
        candidates = read_only_candidates(ctx.tools, trusted=ctx.read_only | ctx.opted_in)

    stale = apply_expected_failures(results, expected)
    results.extend(_stale_result(listed, expected[listed], results, expected_path) for listed in stale)
    summary = summarize(results, stale_count=len(stale))
    return CheckReport(
        server=config.server.name,
        target=config.redactor.redact(describe_target(config.server)),
        started_at=started_at,
        finished_at=utc_now(),
        layers=selected,
        checks=results,
        sizes=sizes,
        coverage=_redacted(coverage, config),
        trusted_read_only=trusted,
        refused_trust=refused,
        read_only_candidates=candidates,
        summary=summary,
        exit_code=1 if summary.failed or summary.stale_expected_failures else 0,
    )


def _redacted(coverage: Coverage | None, config: Config) -> Coverage | None:
    """The coverage section with every secret of the config masked (arguments may hold env values)."""
    if coverage is None:
        return None
    return Coverage.model_validate(config.redactor.redact(coverage.model_dump(mode="json")))


def _stale_result(listed: str, reason: str, results: list[CheckResult], path: Path | None) -> CheckResult:
    """A FAIL that says which entry of the expected-failures list is stale and what to do about it."""
    covered = next(result for result in results if matches(listed, result.id))
    where = f" in {path.name}" if path is not None else ""
    return CheckResult(
        id=f"stale:{listed}",
        name=f"{listed} is listed as an expected failure",
        layer=covered.layer,
        group=STALE_GROUP,
        status="FAIL",
        reason=f"it passes now: remove it from the list{where} (listed because: {reason})",
        tool=covered.tool,
    )


def summarize(results: list[CheckResult], *, stale_count: int = 0) -> CheckSummary:
    """Counts by status; an expected FAIL counts apart from the failures that fail the run."""

    def count(status: str, expected: bool | None = None) -> int:
        return sum(
            1
            for result in results
            if result.status == status
            and (expected is None or (result.expected_failure is not None) == expected)
        )

    return CheckSummary(
        total=len(results),
        passed=count("PASS"),
        failed=count("FAIL", expected=False),
        warned=count("WARN"),
        skipped=count("SKIP"),
        expected_failures=count("FAIL", expected=True),
        stale_expected_failures=stale_count,
    )


def write_check_report(run_dir: RunDir | Path, report: CheckReport) -> Path:
    """Write runs/{run-id}/check_report.json atomically; `run_dir` is a RunDir or the run's folder."""
    folder = run_dir if isinstance(run_dir, RunDir) else RunDir(Path(run_dir))
    return write_model(folder.check_report, report)
