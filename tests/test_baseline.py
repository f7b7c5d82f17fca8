"""Phase 0 against the real example server: reference calls, a fake phase-0 agent, judges, added tasks."""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
import yaml
from click.testing import CliRunner
from fakes.openai_server import FakeOpenAI, text_reply

from mcpipechekr.artifacts import read_model
from mcpipechekr.artifacts.baseline import Baseline
from mcpipechekr.baseline import build_baseline, require_baseline
from mcpipechekr.cli import main
from mcpipechekr.config import ServerConfig, load_config
from mcpipechekr.errors import UserError
from mcpipechekr.runners.base import RunnerOutput, RunRequest
from mcpipechekr.server.lifecycle import ServerUnderTest

# Its module fixtures are costly: under pytest-xdist one worker runs the whole module, building them once.
pytestmark = pytest.mark.xdist_group("test_baseline")

TASKS = [
    {
        "task_id": "count-dana-2019",
        "prompt": "How many emails did Dana Whitfield send in 2019?",
        "task_type": "deterministic",
        "reference_calls": [
            {
                "tool": "count_emails",
                "arguments": {"sender": "Dana Whitfield", "date_from": "2019-01-01", "date_to": "2019-12-31"},
            }
        ],
    },
    {
        "task_id": "ron-2013",
        "prompt": "Which 2013 emails mention Ron Chinn?",
        "task_type": "deterministic",
        "reference_calls": [
            {"tool": "count_emails", "arguments": {"keywords": "Ron Chinn", "date_to": "2012-12-31"}},
            {
                "tool": "query_email_database",
                "arguments": {"keywords": "Ron Chinn", "date_from": "2013-01-01", "date_to": "2013-12-31"},
            },
        ],
    },
    {
        "task_id": "garage-summary",
        "prompt": "Summarise the garage closure email.",
        "task_type": "open_ended",
        "reference_calls": [{"tool": "get_email", "arguments": {"email_id": 2918}}],
    },
    {
        "task_id": "bad-date",
        "prompt": "Count emails since March 2019.",
        "task_type": "deterministic",
        "reference_calls": [{"tool": "count_emails", "arguments": {"date_from": "2019/03/01"}}],
    },
    {
        "task_id": "agent-task",
        "prompt": "How many emails did Dana send in 2019?",
        "task_type": "deterministic",
    },
]


class ScriptedAgent:
    """A phase-0 runner that answers from a script; it records what it was asked."""

    name: ClassVar[str] = "demo"

    def __init__(self, answer: str):
        self.answer = answer
        self.requests: list[RunRequest] = []

    async def run(self, request: RunRequest) -> RunnerOutput:
        self.requests.append(request)
        return RunnerOutput(status="completed", final_answer=self.answer)


def write_project(root: Path, emailindex_dir: Path, emailindex_db: Path, tasks: list[dict], **extra) -> Path:
    config = {
        "server": {
            "name": "emailindex",
            "command": sys.executable,
            "args": ["server.py"],
            "cwd": str(emailindex_dir),
            "env": {"EMAILINDEX_DB": str(emailindex_db)},
        },
        "paths": {"tasks": "tasks.yaml", "runs": "runs", "home": "home"},
        **extra,
    }
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    (root / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}, sort_keys=False))
    return root / "config.yaml"


@pytest.fixture(scope="module")
def live(emailindex_dir: Path, emailindex_db: Path) -> Iterator[ServerUnderTest]:
    server = ServerConfig(
        name="emailindex",
        command=sys.executable,
        args=["server.py"],
        cwd=str(emailindex_dir),
        env={"EMAILINDEX_DB": str(emailindex_db)},
    )
    with ServerUnderTest(server) as running:
        yield running


def dana_2019(db: Path) -> int:
    with sqlite3.connect(db) as con:
        return con.execute(
            "SELECT count(*) FROM emails WHERE (sender LIKE '%Dana Whitfield%' OR sender_name LIKE "
            "'%Dana Whitfield%') AND date >= '2019-01-01' AND date < '2020-01-01'"
        ).fetchone()[0]


def ron_2013(db: Path) -> list[int]:
    with sqlite3.connect(db) as con:
        rows = con.execute(
            "SELECT e.id FROM emails_fts JOIN emails AS e ON e.id = emails_fts.rowid WHERE emails_fts MATCH "
            "'\"Ron Chinn\"' AND e.date >= '2013-01-01' AND e.date < '2014-01-01'"
        ).fetchall()
    return sorted(row[0] for row in rows)


def test_reference_calls_agent_and_rules(
    tmp_path: Path, emailindex_dir: Path, emailindex_db: Path, live: ServerUnderTest
) -> None:
    config = load_config(write_project(tmp_path, emailindex_dir, emailindex_db, TASKS))
    with pytest.raises(UserError, match=r"no baseline yet .*Run `doit baseline`"):
        require_baseline(config)
    agent = ScriptedAgent("Dana sent 29 emails in 2019.")
    outcome = build_baseline(config, runner=agent, server=live)
    baseline = require_baseline(config)
    assert outcome.written and outcome.baselined == [t["task_id"] for t in TASKS]
    entries = {entry.task_id: entry for entry in baseline.tasks}
    assert [entry.task_id for entry in baseline.tasks] == [t["task_id"] for t in TASKS]

    count = entries["count-dana-2019"]
    assert count.result["values"] == [[dana_2019(emailindex_db)]] and count.result["match"] == "all"
    assert count.result["structured_content"] == {"count": dana_2019(emailindex_db)}
    assert (count.method, count.calls, count.evaluator, count.plausibility_score) == (
        "reference_calls",
        1,
        "rules",
        1.0,
    )
    ron = entries["ron-2013"]
    assert ron.result["match"] == "any" and ron.calls == 2 and ron.result["tool"] == "query_email_database"
    assert sorted(group[0] for group in ron.result["values"]) == ron_2013(emailindex_db)
    assert ron.reference_tokens > count.reference_tokens > 0
    garage = entries["garage-summary"]
    assert garage.result["results"][0]["content"]["subject"] == "Parking garage resurfacing schedule"
    bad = entries["bad-date"]
    assert bad.plausibility_score == 0.0 and bad.result is None
    assert any("bad-date" in problem and "is not a date" in problem for problem in outcome.problems)
    agent_entry = entries["agent-task"]
    assert agent_entry.method == "agent" and agent_entry.result["answer"] == "Dana sent 29 emails in 2019."
    # Free text names no checkable values (its numbers may be years, hours, ids): the task is unchecked.
    assert agent_entry.result["values"] == [] and agent_entry.warnings == [
        "unchecked: the baseline names no values to look for: give the task an expected_result "
        "(or reference_calls whose last result is structured)"
    ]
    assert count.warnings == [] and count.plausibility_reason == "not an error, not empty"
    [request] = agent.requests
    assert request.prompt == TASKS[4]["prompt"] and request.server.name == "emailindex"
    assert request.max_requests >= 1000, "phase 0 has no call budget"

    # A task added later is baselined on its own; the others are kept as they were.
    before = read_model(tmp_path / "runs" / "baseline.json", Baseline)
    more = [*TASKS, {**TASKS[0], "task_id": "count-dana-again"}]
    write_project(tmp_path, emailindex_dir, emailindex_db, more)
    outcome = build_baseline(load_config(tmp_path / "config.yaml"), runner=agent, server=live)
    assert outcome.baselined == ["count-dana-again"] and len(agent.requests) == 1
    after = read_model(tmp_path / "runs" / "baseline.json", Baseline)
    assert after.tasks[:5] == before.tasks and after.tasks[5].task_id == "count-dana-again"
    # Nothing new: nothing written.
    again = build_baseline(load_config(tmp_path / "config.yaml"), runner=agent, server=live)
    assert not again.written and again.baselined == []
    # --regenerate-baseline for one task replaces only its entry.
    redo = build_baseline(
        load_config(tmp_path / "config.yaml"), task_ids=["count-dana-2019"], regenerate=True, server=live
    )
    final = read_model(tmp_path / "runs" / "baseline.json", Baseline)
    assert redo.baselined == ["count-dana-2019"]
    assert final.tasks[0].timestamp > after.tasks[0].timestamp and final.tasks[1:] == after.tasks[1:]


def test_expected_result_is_checked_by_the_rules(
    tmp_path: Path, emailindex_dir: Path, emailindex_db: Path, live: ServerUnderTest
) -> None:
    right = {**TASKS[0], "task_id": "right", "expected_result": dana_2019(emailindex_db)}
    wrong = {**TASKS[0], "task_id": "wrong", "expected_result": dana_2019(emailindex_db) + 1}
    config = load_config(write_project(tmp_path, emailindex_dir, emailindex_db, [right, wrong]))
    build_baseline(config, server=live)
    entries = {entry.task_id: entry for entry in require_baseline(config).tasks}
    assert entries["right"].plausibility_score == 1.0
    assert entries["wrong"].plausibility_score == 0.3
    assert entries["wrong"].result["values"] == [[dana_2019(emailindex_db) + 1]]


def test_llm_judge_scores_through_an_openai_compatible_endpoint(
    tmp_path: Path, emailindex_dir: Path, emailindex_db: Path, live: ServerUnderTest
) -> None:
    with FakeOpenAI() as fake:
        fake.enqueue(text_reply(json.dumps({"score": 0.7, "reason": "a count, as asked"})))
        providers = {"endpoints": {"scripted": {"base_url": fake.base_url}}, "phase0": "scripted/judge"}
        path = write_project(tmp_path, emailindex_dir, emailindex_db, TASKS[:1], providers=providers)
        build_baseline(load_config(path), server=live)
        sent = json.dumps(fake.requests[0]["messages"])
    [entry] = require_baseline(load_config(path)).tasks
    assert entry.evaluator == "llm:scripted/judge" and entry.plausibility_score == 0.7
    assert (
        "How many emails did Dana Whitfield send in 2019?" in sent
        and "You check the accepted answers" in sent
    )


def test_cli_baseline_then_unchanged(tmp_path: Path, emailindex_dir: Path, emailindex_db: Path) -> None:
    path = write_project(tmp_path, emailindex_dir, emailindex_db, TASKS[:1])
    result = CliRunner().invoke(main, ["baseline", "--config", str(path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert (
        "baselined  count-dana-2019: reference_calls, plausibility 1.00 (rules: not an error, not empty)"
        in result.output
    )
    result = CliRunner().invoke(main, ["baseline", "--config", str(path)], catch_exceptions=False)
    assert "kept       count-dana-2019" in result.output and "unchanged:" in result.output
