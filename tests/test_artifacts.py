"""Artifact models: round trips, strictness, error messages, traces from a real MCP server, docs."""

from __future__ import annotations

import asyncio
import sys
import textwrap
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from mcp import Client, StdioServerParameters
from pydantic import ValidationError

from mcpipechekr._util.hashing import sha256_bytes
from mcpipechekr._util.tokens import estimate_tokens
from mcpipechekr.artifacts import (
    AcceptedRisk,
    Annotation,
    Baseline,
    BaselineEntry,
    Bug,
    BugReport,
    CheckReport,
    CheckResult,
    CheckSummary,
    Confusion,
    Drift,
    Evidence,
    ImportedSession,
    Manifest,
    ModelTurn,
    Overlap,
    PhaseProviders,
    ResponseSize,
    Review,
    ReviewEntry,
    RunDir,
    SecurityFinding,
    ServerRef,
    StaticFinding,
    TaskStats,
    TefReport,
    ToolCall,
    ToolChange,
    ToolEvaluation,
    ToolsSnapshot,
    Trace,
    Usage,
    bug_id,
    create_run_dir,
    list_traces,
    measure_result,
    read_model,
    read_trace,
    safe_name,
    snapshot_tools,
    tool_call_from_result,
    trace_path,
    write_model,
    write_trace,
)
from mcpipechekr.artifacts.comparison import (
    BugComparison,
    ComparedRun,
    Comparison,
    ComparisonSummary,
    MeanComparison,
    SuccessCounts,
    TaskComparison,
)
from mcpipechekr.artifacts.description_suggestions import (
    DescriptionSuggestion,
    DescriptionSuggestions,
    ParameterRank,
    QueryChange,
    Rescore,
    SkippedBug,
    StepQuote,
    TextEdit,
    ToolFigures,
)
from mcpipechekr.artifacts.fieldtables import models_in_order, refresh_doc_text
from mcpipechekr.artifacts.findings import Finding
from mcpipechekr.artifacts.fix_record import AgentRun, BugFix, FixHealth, FixRecord
from mcpipechekr.artifacts.handover import Handover
from mcpipechekr.artifacts.kpi import KpiFigure, KpiReport
from mcpipechekr.artifacts.server_starts import ServerStarts, StartMeasure
from mcpipechekr.errors import UserError
from mcpipechekr.findings.evidence.records import CallRecord
from mcpipechekr.findings.views.render import FindingsList

REPO = Path(__file__).resolve().parent.parent
T0 = datetime(2025, 1, 14, 9, 30, tzinfo=UTC)
HASH = sha256_bytes(b"tasks")


def make_manifest() -> Manifest:
    return Manifest(
        run_id="run-20250114-001",
        started_at=T0,
        harness_version="0.1.0",
        mcp_server_sha="0123abc",
        mcp_server_dirty=True,
        task_file_hash=HASH,
        providers=PhaseProviders(phase05="demo", phase1="openai/gpt-4o", phase2="anthropic/claude"),
        config_hash=sha256_bytes(b"config"),
        config={"server": {"command": "python", "env": {"TOKEN": "***"}}, "repetitions": 3},
        server=ServerRef(name="mail", transport="stdio", command="python server.py"),
        task_ids=["query-email-database", "send-reply"],
        accepted_risks=[AcceptedRisk(rule_id="TEF-S001", tool="run_sql", reason="read-only database")],
        imports=[
            ImportedSession(
                trace="send-reply__anthropic_claude-sonnet-4-6__r001.json",
                task_id="send-reply",
                runner="claude-code",
                client_version="2.1.332",
                source_name="session.jsonl",
                source_hash=sha256_bytes(b"session"),
                imported_at=T0 + timedelta(minutes=2),
            )
        ],
        reviews=[
            ReviewEntry(
                decision="approve",
                decided_by="dana",
                decided_at=T0 + timedelta(minutes=2),
                bug_report_hash=sha256_bytes(b"bug report"),
                bug_ids=["wrong-sort-order"],
            )
        ],
    ).finished("completed", at=T0 + timedelta(minutes=3))


def make_baseline() -> Baseline:
    return Baseline(
        generated_at=T0,
        mcp_server_sha="0123abc",
        tasks=[
            BaselineEntry(
                task_id="query-email-database",
                result={"count": 3, "ids": [1, 2, 3], "note": None},
                plausibility_score=0.9,
                evaluator="llm:openai/gpt-4o",
                timestamp=T0,
            ),
            BaselineEntry(
                task_id="send-reply", result="sent", plausibility_score=1.0, evaluator="rules", timestamp=T0
            ),
        ],
    )


def make_bug_report() -> BugReport:
    return BugReport(
        run_id="run-20250114-001",
        phase1_provider="openai/gpt-4o",
        phase2_provider="anthropic/claude",
        evaluated_at=T0,
        bugs=[
            Bug(
                id="EFF-no-date-sort-query-email-database",
                type="efficiency",
                severity="medium",
                source="analyzer",
                tool="search_email",
                task_id="query-email-database",
                trigger="asking for the newest email",
                observed="listed all emails and sorted them in the prompt",
                expected="one call with sort=date",
                acceptance_criteria=["search_email accepts sort", "the task needs one call"],
                token_cost_observed=5200,
                token_cost_optimal=800,
                token_cost_of_gap=4400,
                occurrences=3,
                task_ids=["query-email-database"],
                evidence=[Evidence(task_id="query-email-database", trace="traces/x.json", steps=[1, 3])],
            ),
            Bug(
                id="COR-wrong-timezone",
                type="correctness",
                severity="high",
                source="llm",
                trigger="t",
                observed="o",
                expected="e",
                token_cost_observed=0,
                token_cost_optimal=0,
                token_cost_of_gap=0,
            ),
        ],
        tasks=[
            TaskStats(
                task_id="query-email-database",
                runs=5,
                successes=4,
                success_rate=0.8,
                wilson_low=0.376,
                wilson_high=0.964,
                k=3,
                pass_at_k=0.99,
                pass_hat_k=0.5,
                efficiency_ratio=0.15,
            )
        ],
    )


def make_description_suggestions() -> DescriptionSuggestions:
    return DescriptionSuggestions(
        run_id="run-20250114-001",
        generated_at=T0,
        bug_report_hash=sha256_bytes(b"report"),
        tools_hash=sha256_bytes(b"tools"),
        selectors=["lexical-bm25", "llm:openai/gpt-4o"],
        suggestions=[
            DescriptionSuggestion(
                bug_id="DSC-late-tool-get-email",
                bug_type="description",
                kind="late_tool",
                tool="get_email",
                current="Get an email.",
                proposed='Get an email. Use it for requests such as "Show me the full email from …".',
                also=[
                    TextEdit(
                        tool="search_email",
                        current="Search emails.",
                        proposed="Search emails. For what `get_email` answers, use `get_email` instead.",
                    )
                ],
                origin="evidence",
                reasoning="the agent took `search_email` for requests `get_email` answers",
                quotes=[
                    StepQuote(
                        trace="traces/full-email__demo__r001.json",
                        task_id="full-email",
                        step=1,
                        call='search_email({"text": "budget"})',
                        agent_said="Searching first.",
                        why="`search_email` called for a request `get_email` answers",
                    )
                ],
                rescores=[
                    Rescore(
                        selector="lexical-bm25",
                        queries=3,
                        right_before=2,
                        right_after=3,
                        changes=[
                            QueryChange(
                                source="task:full-email",
                                query="Show me the full email from Ron.",
                                expected_tool="get_email",
                                picked_before="search_email",
                                picked_after="get_email",
                                rank_before=2,
                                rank_after=1,
                                right_before=0.0,
                                right_after=1.0,
                            )
                        ],
                        tools=[
                            ToolFigures(
                                tool="get_email", precision_after=1.0, recall_before=0.0, recall_after=1.0
                            )
                        ],
                        verdict="better",
                    )
                ],
            ),
            DescriptionSuggestion(
                bug_id="GAP-paging-to-find-list-email",
                bug_type="feature_gap",
                kind="unused_parameter",
                tool="list_email",
                parameter="order",
                proposed="The order of the results: `desc` lists the latest first.",
                origin="model",
                reasoning="the agent paged through 3 pages without setting `order`",
                rescores=[
                    Rescore(
                        selector="lexical-bm25",
                        queries=3,
                        right_before=3,
                        right_after=3,
                        parameter=[ParameterRank(source="task:latest", parameters=3, rank_after=1)],
                        verdict="better",
                    )
                ],
                notes=["llm:openai/gpt-4o: drafted the text; it scored no worse than the offline one"],
            ),
        ],
        skipped=[SkippedBug(bug_id="BUG-timeout-get-email", reason="a defect of the server's code")],
    )


def make_tef_report() -> TefReport:
    return TefReport(
        generated_at=T0,
        server="mail",
        tools_hash=sha256_bytes(b"tools"),
        selector="llm:openai/gpt-4o",
        tools=[
            ToolEvaluation(
                name="search_email",
                findings=[
                    StaticFinding(
                        rule_id="TEF-D001", severity="warning", message="no example", suggestion="add one"
                    ),
                    StaticFinding(rule_id="TEF-D002", severity="info", message="long"),
                ],
                precision=0.5,
                recall=1.0,
                f1=0.667,
                support=2,
                misleading=True,
                confusions=[Confusion(picked="search_email", expected="get_email", count=2)],
            ),
            ToolEvaluation(name="get_email"),
        ],
        overlaps=[
            Overlap(
                tool_a="search_email",
                tool_b="get_email",
                score=0.7,
                lexical=0.6,
                param_jaccard=0.5,
                shared_terms=["email"],
            )
        ],
        security=[
            SecurityFinding(
                tool="get_email",
                rule_id="TEF-S002",
                severity="error",
                span="ignore previous",
                start=10,
                end=25,
                message="hidden instruction",
            )
        ],
        drift=Drift(added=["get_email"], changed=[ToolChange(tool="search_email", diff="-a\n+b\n")]),
        accepted_risks=[AcceptedRisk(rule_id="TEF-S001", reason="known")],
    )


def make_trace() -> Trace:
    content = [{"type": "text", "text": "3 emails"}]
    size, tokens = measure_result(content)
    return Trace(
        task_id="query-email-database",
        repetition=2,
        provider="openai/gpt-4o",
        model="gpt-4o-2024-08-06",
        runner="native",
        prompt="How many emails?",
        started_at=T0,
        ended_at=T0 + timedelta(seconds=5),
        status="completed",
        steps=[
            ModelTurn(
                index=0,
                text="",
                thinking=["I should search"],
                usage=Usage(input_tokens=100, output_tokens=20, cache_read_tokens=50, source="reported"),
                request_id="req_1",
            ),
            ToolCall(
                index=1,
                call_id="call_1",
                tool="search_email",
                arguments={"q": "all"},
                result_content=content,
                structured_content={"count": 3},
                latency_ms=12.5,
                result_bytes=size,
                result_tokens_estimated=tokens,
            ),
            ToolCall(
                index=2,
                call_id="call_2",
                tool="get_email",
                arguments={"id": 9},
                is_error=True,
                error_text="no email 9",
                latency_ms=3.0,
                result_bytes=2,
                result_tokens_estimated=1,
            ),
            ModelTurn(index=3, text="3", usage=Usage.estimated("How many emails? 3 emails", "3")),
        ],
        final_answer="3",
    )


QUERY_TOOL = {
    "name": "query_email_database",
    "description": "Search emails by keywords, sender and date range.",
    "inputSchema": {"type": "object", "properties": {"keywords": {"type": "string"}}},
    "annotations": {"readOnlyHint": True},
}


def make_tools_snapshot() -> ToolsSnapshot:
    return snapshot_tools(
        "emailindex", [QUERY_TOOL], protocol_version="2026-07-28", server_info={"name": "e"}
    )


def test_tool_snapshot_hashes_change_exactly_when_a_definition_changes() -> None:
    first = make_tools_snapshot()
    assert first.tools[0].input_schema == QUERY_TOOL["inputSchema"]
    again = make_tools_snapshot()
    assert again.tools_hash == first.tools_hash  # the time it was taken does not matter
    changed = snapshot_tools("emailindex", [{**QUERY_TOOL, "description": "Search emails."}])
    assert changed.tools[0].definition_hash != first.tools[0].definition_hash
    assert changed.tools_hash != first.tools_hash
    reordered = snapshot_tools("emailindex", [QUERY_TOOL, {**QUERY_TOOL, "name": "b"}])
    assert (
        reordered.tools_hash
        != snapshot_tools("emailindex", [{**QUERY_TOOL, "name": "b"}, QUERY_TOOL]).tools_hash
    )


def make_check_report() -> CheckReport:
    now = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
    return CheckReport(
        server="emailindex",
        target="stdio: python server.py",
        started_at=now,
        finished_at=now + timedelta(seconds=3),
        layers=["protocol", "quality"],
        checks=[
            CheckResult(
                id="PC-01",
                name="initialize",
                layer="protocol",
                group="Discovery",
                status="PASS",
                reason="emailindex 1.0",
            ),
            CheckResult(
                id="QC-01:query_email_database",
                name="response within budget",
                layer="quality",
                group="Response size",
                status="WARN",
                tool="query_email_database",
                reason="5,120 tokens > budget 4,000",
                details={"tokens": 5120},
            ),
        ],
        sizes=[
            ResponseSize(
                tool="query_email_database",
                source="generated",
                chars=20480,
                tokens_estimated=5120,
                budget_tokens=4000,
                over_budget=True,
            )
        ],
        summary=CheckSummary(
            total=2, passed=1, failed=0, warned=1, skipped=0, expected_failures=0, stale_expected_failures=0
        ),
        exit_code=0,
    )


def make_review() -> Review:
    report = make_bug_report()
    return Review(
        run_id=report.run_id,
        decision="approve",
        annotations=[Annotation(text="prefer a sort_order parameter", by="dana", at=T0)],
        decided_by="dana",
        decided_at=T0 + timedelta(minutes=5),
        bug_report_hash=sha256_bytes(b"bug report"),
        bug_ids=[bug.id for bug in report.bugs],
    )


def make_fix_record() -> FixRecord:
    report = make_bug_report()
    first, second = report.bugs[0].id, report.bugs[-1].id
    return FixRecord(
        run_id=report.run_id,
        bug_report_hash=sha256_bytes(b"bug report"),
        agent="claude-code",
        provider="anthropic/claude-sonnet-4-6",
        repo="/work/emailindex",
        base_commit="a" * 40,
        started_at=T0,
        finished_at=T0 + timedelta(minutes=9),
        bugs=[
            BugFix(
                bug_id=first,
                status="committed",
                iterations=2,
                commit="b" * 40,
                files_changed=["server.py"],
                agent_command="claude -p --model claude-sonnet-4-6 {prompt}",
                prompt=f"fix/{first}.prompt.md",
                runs=[
                    AgentRun(
                        iteration=1, exit_code=0, promise=False, elapsed_s=61.5, log=f"fix/{first}.run-1.log"
                    ),
                    AgentRun(
                        iteration=2, exit_code=0, promise=True, elapsed_s=40.2, log=f"fix/{first}.run-2.log"
                    ),
                ],
            ),
            BugFix(
                bug_id=second,
                status="unresolved",
                iterations=1,
                reason="no completion promise after 1 run(s); last run: timed out",
                runs=[
                    AgentRun(
                        iteration=1,
                        exit_code=None,
                        timed_out=True,
                        promise=False,
                        elapsed_s=1800.0,
                        log=f"fix/{second}.run-1.log",
                    )
                ],
            ),
        ],
        health=FixHealth(healthy=True, tools=3, elapsed_s=1.2, after_commit="b" * 40, checked_at=T0),
    )


def make_findings_list() -> FindingsList:
    return FindingsList(
        findings=[
            Finding(
                id="finding-0123456789abcdef",
                origin="captured",
                server="emailindex",
                tool="search_emails",
                template_id="0123456789abcdef",
                defect_class="validation_error",
                hint="Validate the arguments up front.",
                severity="medium",
                err_code="-32602",
                err_codes=["-32602", "validation"],
                rate=0.25,
                score=0.12,
                occurrences=5,
                sessions=3,
                blast_radius=1,
                retryable=False,
                arg_shapes=[{"query": "string", "limit": "integer"}],
                first_seen=T0,
                last_seen=T0 + timedelta(days=2),
                state="verifying",
                streak=1,
            )
        ]
    )


def make_call_record() -> CallRecord:
    return CallRecord(
        event_id="3f2a9c1e-5b7d-4e8f-9a0b-1c2d3e4f5a6b",
        session="run-20250114-001/t1__demo__r001",
        seq=2,
        at=T0,
        server="emailindex",
        tool="search_emails",
        template_id="0123456789abcdef",
        arg_shape={"query": "string", "limit": "integer"},
        outcome="error",
        err_code="-32602",
        retryable=False,
        latency_ms=12.5,
        request_bytes=180,
        response_bytes=240,
    )


def make_server_starts() -> ServerStarts:
    at = datetime(2026, 12, 4, 9, 30, tzinfo=UTC)
    return ServerStarts(
        servers={
            "notes:0f3a9c1e5b2d7a41": [
                StartMeasure(at=at, wall_s=21.4, cpu_s=1.2),
                StartMeasure(at=at, wall_s=0.8),
            ]
        }
    )


def make_handover() -> Handover:
    return Handover(
        journal="t1__demo__r001.jsonl",
        life="2026-12-04T09:30:00.123456+00:00/5123.25",
        home_journal="20261204T093001.000001Z-phase1-4242-0a1b2c.jsonl",
    )


def make_kpi_report() -> KpiReport:
    return KpiReport(
        run_id="run-20250114-002",
        computed_at=datetime(2025, 1, 14, 10, 0, tzinfo=UTC),
        previous_run_id="run-20250114-001",
        loop=2,
        gap_token_cost=1200,
        kpis=[
            KpiFigure(
                name="call_efficiency_ratio",
                value=1.25,
                target=1.3,
                direction="at_most",
                status="met",
                basis="15 calls made / 12 at the baseline's minimum, over 3 tasks",
                previous=1.75,
                trend="better",
            ),
            KpiFigure(
                name="regression_rate",
                target=0.0,
                direction="at_most",
                status="not_measured",
                basis="no fix claimed yet in this session",
            ),
        ],
    )


def make_comparison() -> Comparison:
    def side(run_id: str, sha: str) -> ComparedRun:
        return ComparedRun(
            run_id=run_id,
            server="emailindex",
            server_sha=sha,
            phase1_provider="demo",
            task_file_hash="sha256:" + "b" * 64,
            harness_version="0.1.0",
            tasks=1,
            attempts=10,
            bugs=1,
        )

    return Comparison(
        a=side("run-20250114-001", "a" * 40),
        b=side("run-20250114-002", "c" * 40),
        alpha=0.05,
        bootstrap_resamples=2000,
        bootstrap_seed="mcpipechekr-compare",
        changes=["server source: aaaaaaaaaaaa → cccccccccccc"],
        tasks=[
            TaskComparison(
                task_id="find-first",
                present_in="both",
                success_a=SuccessCounts(runs=10, successes=0, failures=10, undecided=0, rate=0.0),
                success_b=SuccessCounts(runs=10, successes=10, failures=0, undecided=0, rate=1.0),
                p_value=1.0825e-05,
                calls=MeanComparison(
                    mean_a=5.0, mean_b=1.0, difference=-4.0, low=-4.0, high=-4.0, significant=True
                ),
                changed=["success", "calls"],
                verdict="better",
                reason="success 0/10 → 10/10 (Fisher p = 1.1e-05)",
            )
        ],
        bugs=[
            BugComparison(
                id="GAP-no-date-sort-query-email-database",
                status="fixed",
                type="feature_gap",
                severity="high",
                tool="query_email_database",
                fixable_by="server",
                occurrences_a=10,
                occurrences_b=0,
                token_cost_of_gap_a=1800,
            )
        ],
        summary=ComparisonSummary(
            tasks_compared=1,
            tasks_better=1,
            tasks_worse=0,
            tasks_mixed=0,
            tasks_only_a=0,
            tasks_only_b=0,
            bugs_fixed=1,
            bugs_new=0,
            bugs_unchanged=0,
            bugs_not_compared=0,
        ),
        verdict="better",
        verdict_line="B is better: 1 task improved significantly, 0 worse; 1 bug fixed, 0 new",
    )


SAMPLES = {
    "manifest": make_manifest,
    "baseline": make_baseline,
    "bug_report": make_bug_report,
    "tef_report": make_tef_report,
    "description_suggestions": make_description_suggestions,
    "trace": make_trace,
    "tools_snapshot": make_tools_snapshot,
    "check_report": make_check_report,
    "review": make_review,
    "fix_record": make_fix_record,
    "call_record": make_call_record,
    "findings": make_findings_list,
    "comparison": make_comparison,
    "server_starts": make_server_starts,
    "handover": make_handover,
    "kpi": make_kpi_report,
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_model_round_trips_through_a_file(tmp_path: Path, name: str) -> None:
    original = SAMPLES[name]()
    path = write_model(tmp_path / f"{name}.json", original)
    loaded = read_model(path, type(original))
    assert loaded == original
    text = path.read_text()
    assert text.startswith(f'{{\n  "version": {original.version},') and text.endswith("}\n")
    assert "$schema" not in text
    write_model(tmp_path / "again.json", loaded)
    assert (tmp_path / "again.json").read_bytes() == path.read_bytes()


def test_every_field_of_every_model_is_described() -> None:
    missing = [
        f"{model.__name__}.{field_name}"
        for _, model in models_in_order()
        for field_name, field in model.model_fields.items()
        if not (field.description or "").strip()
    ]
    assert missing == []
    assert {name for name, _ in models_in_order() if name} == set(SAMPLES)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_top_level_files_carry_a_version_and_reject_others(tmp_path: Path, name: str) -> None:
    sample = SAMPLES[name]()
    data = sample.model_dump(mode="json")
    assert data["version"] == type(sample).model_fields["version"].default
    data["version"] += 1
    path = tmp_path / "future.json"
    path.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))
    with pytest.raises(UserError) as info:
        read_model(path, type(sample))
    assert "field `version`" in info.value.message and "line 2" in info.value.message


def test_unknown_nested_field_names_path_field_and_line(tmp_path: Path) -> None:
    data = make_bug_report().model_dump(mode="json")
    data["bugs"][1]["typo_field"] = 1
    path = tmp_path / "bug_report.json"
    path.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "typo_field" in text)
    with pytest.raises(UserError) as info:
        read_model(path, BugReport)
    message = info.value.message
    assert str(path) in message and "BugReport" in message
    assert f"line {line}, field `bugs[1].typo_field`" in message
    assert info.value.exit_code == 2


def test_bad_value_inside_a_trace_step_points_at_its_line(tmp_path: Path) -> None:
    data = make_trace().model_dump(mode="json")
    data["steps"][2]["latency_ms"] = -4
    path = tmp_path / "trace.json"
    path.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if '"latency_ms": -4' in text)
    with pytest.raises(UserError) as info:
        read_trace(path)
    assert f"line {line}, field `steps[2].tool_call.latency_ms`" in info.value.message
    assert "got -4" in info.value.message


def test_unknown_step_kind_and_missing_field(tmp_path: Path) -> None:
    data = make_trace().model_dump(mode="json")
    data["steps"][0]["kind"] = "thought"
    del data["prompt"]
    path = tmp_path / "trace.json"
    path.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))
    with pytest.raises(UserError) as info:
        read_trace(path)
    message = info.value.message
    assert "field `prompt`: Field required" in message and "field `steps[0]`" in message
    assert "'model', 'tool_call'" in message


def test_unreadable_files_name_the_path(tmp_path: Path) -> None:
    with pytest.raises(UserError) as info:
        read_model(tmp_path / "absent.json", Manifest)
    assert "absent.json" in info.value.message and "Manifest" in info.value.message
    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "version": 1,\n  "run_id": \n}\n')
    with pytest.raises(UserError) as info:
        read_model(broken, Manifest)
    assert "broken.json" in info.value.message and "line 4, column 1" in info.value.message


def test_naive_datetimes_and_malformed_ids_are_rejected() -> None:
    data = make_manifest().model_dump(mode="json")
    for field, value in [
        ("started_at", "2025-01-14T09:30:00"),
        ("run_id", "run-2025-01-14-1"),
        ("task_file_hash", "md5:abc"),
        ("status", "done"),
    ]:
        with pytest.raises(ValidationError) as info:
            Manifest.model_validate({**data, field: value})
        assert info.value.errors()[0]["loc"] == (field,)


@pytest.mark.parametrize("old", [1, 2, 3])
def test_an_older_manifest_reads_as_version_4_without_the_newer_fields(tmp_path: Path, old: int) -> None:
    data = make_manifest().model_dump(mode="json")
    del data["reviews"], data["imports"], data["shard"], data["merged_from"]
    data["version"] = old
    path = tmp_path / "manifest.json"
    path.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))
    manifest = read_model(path, Manifest)
    assert (manifest.version, manifest.imports, manifest.reviews) == (4, [], [])
    assert (manifest.shard, manifest.merged_from) == (None, [])
    added = {"version", "imports", "reviews", "shard", "merged_from"}
    assert manifest.model_dump(exclude=added) == make_manifest().model_dump(exclude=added)
    assert read_model(write_model(path, manifest), Manifest) == manifest
    assert path.read_text().startswith('{\n  "version": 4,')


def test_manifest_status_rules() -> None:
    running = make_manifest().model_copy(update={"status": "running", "finished_at": None})
    data = running.model_dump()
    assert Manifest.model_validate(data).status == "running"
    with pytest.raises(ValidationError, match="needs `finished_at`"):
        Manifest.model_validate({**data, "status": "failed"})
    with pytest.raises(ValidationError, match="before `started_at`"):
        Manifest.model_validate({**data, "status": "failed", "finished_at": T0 - timedelta(seconds=1)})
    ended = Manifest.model_validate(data).finished("interrupted", "Ctrl-C")
    assert ended.status == "interrupted" and ended.status_reason == "Ctrl-C" and ended.finished_at is not None
    with pytest.raises(ValueError):
        ended.finished("running")
    with pytest.raises(ValidationError, match="needs `url`"):
        ServerRef(name="s", transport="http", command="python x.py")


def test_baseline_has_one_entry_per_task() -> None:
    baseline = make_baseline()
    assert baseline.entry("send-reply") is not None and baseline.entry("nope") is None
    data = baseline.model_dump()
    data["tasks"].append(data["tasks"][0])
    with pytest.raises(ValidationError, match="appears twice"):
        Baseline.model_validate(data)
    data = baseline.model_dump()
    data["tasks"][0]["plausibility_score"] = 1.5
    with pytest.raises(ValidationError):
        Baseline.model_validate(data)


def test_bug_ids_match_their_type_and_are_unique() -> None:
    assert (
        bug_id("efficiency", "No date sort", "query-email-database")
        == "EFF-no-date-sort-query-email-database"
    )
    assert bug_id("feature_gap", "bulk delete!") == "GAP-bulk-delete"
    with pytest.raises(ValueError):
        bug_id("bug", "!!!")
    data = make_bug_report().model_dump()
    bad_prefix = {**data["bugs"][1], "id": "BUG-wrong-timezone"}
    with pytest.raises(ValidationError, match="starts with `COR-`"):
        Bug.model_validate(bad_prefix)
    with pytest.raises(ValidationError):
        Bug.model_validate({**data["bugs"][1], "id": "COR-Has Spaces"})
    with pytest.raises(ValidationError, match="appears twice"):
        BugReport.model_validate({**data, "bugs": [data["bugs"][0], data["bugs"][0]]})
    with pytest.raises(ValidationError):
        Bug.model_validate({**data["bugs"][0], "occurrences": 0})
    with pytest.raises(ValidationError):
        Evidence.model_validate({"task_id": "t", "trace": "traces/x.json", "steps": [-1]})


def test_task_stats_consistency() -> None:
    good = make_bug_report().tasks[0].model_dump()
    with pytest.raises(ValidationError, match="exceeds `runs`"):
        TaskStats.model_validate({**good, "successes": 6})
    with pytest.raises(ValidationError, match="above `wilson_high`"):
        TaskStats.model_validate({**good, "wilson_low": 0.99})


def test_tef_summary_is_computed_and_checked() -> None:
    report = make_tef_report()
    summary = report.summary
    assert (summary.tools, summary.errors, summary.warnings, summary.infos) == (2, 1, 1, 1)
    assert (summary.misleading_tools, summary.overlaps, summary.security_findings, summary.drift_changes) == (
        1,
        1,
        1,
        2,
    )
    data = report.model_dump()
    data["summary"]["errors"] = 0
    with pytest.raises(ValidationError, match="does not match the lists"):
        TefReport.model_validate(data)
    del data["summary"]
    assert TefReport.model_validate(data).summary == summary
    with pytest.raises(ValidationError):
        TefReport.model_validate({**data, "selector": "random"})
    with pytest.raises(ValidationError, match="`end` is before `start`"):
        SecurityFinding.model_validate({**data["security"][0], "start": 30})


def test_trace_totals_and_step_order() -> None:
    trace = make_trace()
    totals = trace.totals
    estimated_in = estimate_tokens("How many emails? 3 emails")
    assert (totals.model_turns, totals.tool_calls, totals.errors) == (2, 2, 1)
    assert totals.input_tokens == 100 + estimated_in and totals.output_tokens == 20 + estimate_tokens("3")
    assert totals.total_tokens == totals.input_tokens + totals.output_tokens
    assert totals.usage_source == "mixed"
    only_reported = trace.model_copy(update={"steps": trace.steps[:3]})
    assert only_reported.compute_totals().usage_source == "reported"
    data = trace.model_dump()
    data["steps"] = [data["steps"][1], data["steps"][0]]
    del data["totals"]
    with pytest.raises(ValidationError, match="indexes count 0, 1, 2"):
        Trace.model_validate(data)
    data = trace.model_dump()
    data["totals"]["errors"] = 0
    with pytest.raises(ValidationError, match="does not match the steps"):
        Trace.model_validate(data)
    with pytest.raises(ValidationError):
        Trace.model_validate({**trace.model_dump(), "repetition": 0})


def test_trace_paths_are_safe_and_ordered(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run-20250114-001")
    path = trace_path(run, "query-email-database", "openai/gpt-4o", 2)
    assert path == run.traces / "query-email-database__openai_gpt-4o__r002.json"
    assert trace_path(run.root, "query-email-database", "openai/gpt-4o", 2) == path
    assert safe_name("../../etc/passwd") == "etc_passwd"
    assert safe_name("ollama:llama3.1 8b") == "ollama_llama3.1_8b"
    assert safe_name("...") == "_"
    names = [trace_path(run, "t", "demo", n).name for n in (1, 2, 10)]
    assert names == sorted(names)
    with pytest.raises(ValueError):
        trace_path(run, "t", "demo", 0)


def test_write_trace_recomputes_totals_after_steps_are_appended(tmp_path: Path) -> None:
    run = create_run_dir(tmp_path, today=T0.date())
    trace = make_trace()
    trace.steps.append(
        ModelTurn(index=4, text="done", usage=Usage(input_tokens=7, output_tokens=1, source="reported"))
    )
    path = write_trace(run, trace)
    assert path == trace_path(run, trace.task_id, trace.provider, trace.repetition)
    loaded = read_trace(path)
    assert loaded.totals.model_turns == 3 and loaded.steps[-1].index == 4
    assert list_traces(run) == [path] and list_traces(tmp_path / "nowhere") == []


SERVER = textwrap.dedent(
    """
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from pydantic import BaseModel

    app = MCPServer("artifact-test")

    class Count(BaseModel):
        query: str
        count: int

    @app.tool(description="Count emails matching a query.")
    def count_emails(query: str) -> Count:
        return Count(query=query, count=len(query))

    @app.tool(description="Fetch one email by id.")
    def get_email(email_id: int) -> str:
        raise ToolError(f"no email with id {email_id}; ids start at 1")

    app.run()
    """
)


@pytest.fixture(scope="module")
def server_results(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, dict[str, Any], Any, float]]:
    """Call a real stdio MCP server once per tool; the results are what runners turn into ToolCalls."""
    script = tmp_path_factory.mktemp("server") / "server.py"
    script.write_text(SERVER)

    async def call_all() -> list[tuple[str, dict[str, Any], Any, float]]:
        params = StdioServerParameters(command=sys.executable, args=[str(script)])
        out = []
        async with Client(params) as client:
            for tool, args in [("count_emails", {"query": "invoice"}), ("get_email", {"email_id": 9})]:
                began = time.perf_counter()
                result = await client.call_tool(tool, args)
                out.append((tool, args, result, (time.perf_counter() - began) * 1000))
        return out

    return asyncio.run(asyncio.wait_for(call_all(), timeout=60))


@pytest.mark.slow
def test_tool_calls_from_a_real_server_are_measured_and_round_trip(
    tmp_path: Path, server_results: list[tuple[str, dict[str, Any], Any, float]]
) -> None:
    steps = []
    for index, (tool, args, result, latency) in enumerate(server_results):
        steps.append(
            tool_call_from_result(
                index=index,
                call_id=f"c{index}",
                tool=tool,
                arguments=args,
                content=result.content,
                structured_content=result.structured_content,
                is_error=result.is_error,
                latency_ms=latency,
            )
        )
    ok, failed = steps
    assert not ok.is_error and ok.structured_content == {"query": "invoice", "count": 7}
    assert ok.result_content[0]["type"] == "text" and "invoice" in ok.result_content[0]["text"]
    # Priced once, as a model reads it: the text block (JSON, by its compact form), not the
    # structured copy of the same data as well.
    expected = orjson.dumps(orjson.loads(ok.result_content[0]["text"]))
    assert expected == orjson.dumps(ok.structured_content)
    assert ok.result_bytes == len(expected) and ok.result_tokens_estimated == estimate_tokens(expected)
    assert failed.is_error and failed.error_text is not None and "no email with id 9" in failed.error_text

    trace = Trace(
        task_id="count-invoices",
        provider="demo",
        runner="demo",
        prompt="Count invoices",
        started_at=T0,
        ended_at=T0 + timedelta(seconds=1),
        status="completed",
        steps=steps,
        final_answer="7",
    )
    path = write_trace(tmp_path, trace)
    loaded = read_trace(path)
    assert loaded == trace.model_copy(update={"totals": trace.compute_totals()})
    assert loaded.totals.tool_calls == 2 and loaded.totals.errors == 1


def test_models_reject_unknown_keys_everywhere() -> None:
    lax = [model.__name__ for _, model in models_in_order() if model.model_config.get("extra") != "forbid"]
    assert lax == []


def test_docs_field_tables_are_current_and_complete() -> None:
    doc = (REPO / "docs" / "artifacts.md").read_text(encoding="utf-8")
    assert refresh_doc_text(doc) == doc, (
        "docs/artifacts.md is stale: run `python -m mcpipechekr.artifacts.fieldtables docs/artifacts.md`"
    )
    for _, model in models_in_order():
        assert f"{model.__name__}" in doc
        for field_name in model.model_fields:
            assert f"| `{field_name}` |" in doc, (
                f"{model.__name__}.{field_name} missing from docs/artifacts.md"
            )
    for word in ("run-YYYYMMDD-NNN", "runs/baseline.json", ".tmp-", "local"):
        assert word in doc
