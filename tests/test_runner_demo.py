"""The example's demo agent (examples/emailindex/demo_agent.py, run by the demo runner from the server's
folder) on the example's eight tasks, against the live emailindex server through the capture proxy,
before and after the maintainer's fix patches.

Expected answers are read from the archive with SQL, never written into the test; the demo sees only
the prompt, the tool list and the results, so the fixed server changes its behaviour only through the
new `sort_order` parameter and the working `fields` projection.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from mcpipechekr.artifacts.trace import ModelTurn, ToolCall
from mcpipechekr.capture import journal_tool_calls, proxy_server
from mcpipechekr.config import ServerConfig, load_config
from mcpipechekr.providers import parse_provider
from mcpipechekr.runners.base import DEMO_MODEL_LABEL, RunnerOutput, RunRequest
from mcpipechekr.runners.demo import DemoRunner, load_demo_module
from mcpipechekr.tasks import Task, load_tasks

# Its module fixtures are costly: under pytest-xdist one worker runs the whole module, building them once.
pytestmark = pytest.mark.xdist_group("test_runner_demo")

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_AGENT = load_demo_module(REPO / "examples" / "emailindex" / "demo_agent.py")
FALLBACK_START_YEAR = EXAMPLE_AGENT.FALLBACK_START_YEAR
FIRST = "find-first-email-ron-chinn"
PROJECTION = "list-office-move-emails-2024"
LATEST = "latest-email-from-ron-chinn"


def example_tasks() -> dict[str, Task]:
    return {task.task_id: task for task in load_tasks(REPO / "tasks.yaml").tasks}


def run_demo(
    tmp_path: Path, server_dir: Path, db: Path, tasks: list[Task]
) -> dict[str, tuple[RunnerOutput, Path]]:
    """Run the demo on these tasks at once (one proxy and server process each); output and journal.

    The server's folder (its `cwd`, as in config.yaml) holds the demo agent the runner loads.
    """
    effective = {"name": "emailindex", "command": "python", "cwd": str(server_dir)}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"server": effective}))
    config = load_config(tmp_path / "config.yaml")
    server = ServerConfig(
        name="emailindex",
        command="python",
        args=["server.py"],
        cwd=str(server_dir),
        env={"EMAILINDEX_DB": str(db)},
    )
    results: dict[str, tuple[RunnerOutput, Path]] = {}

    async def one(task: Task) -> None:
        journal = tmp_path / f"{task.task_id}.jsonl"
        request = RunRequest(
            task=task,
            prompt=task.prompt,
            provider=parse_provider("demo"),
            repetition=1,
            server=proxy_server(server, journal, "emailindex"),
            journal=journal,
            workdir=tmp_path,
            config=config,
            timeout_s=120.0,
            max_requests=40,
        )
        results[task.task_id] = (await DemoRunner().run(request), journal)

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for task in tasks:
                group.start_soon(one, task)

    anyio.run(main)
    return results


@pytest.fixture(scope="module")
def before_fix(tmp_path_factory: pytest.TempPathFactory, emailindex_dir: Path, emailindex_db: Path):
    tasks = list(example_tasks().values())
    return run_demo(tmp_path_factory.mktemp("demo-before"), emailindex_dir, emailindex_db, tasks)


@pytest.fixture(scope="module")
def after_fix(tmp_path_factory: pytest.TempPathFactory, emailindex_dir: Path, emailindex_db: Path):
    fixed = tmp_path_factory.mktemp("emailindex-fixed") / "emailindex"
    shutil.copytree(emailindex_dir, fixed, ignore=shutil.ignore_patterns("archive.db", "__pycache__"))
    for patch in sorted((fixed / "fixes").glob("*.patch")):
        subprocess.run(["git", "apply", str(patch)], cwd=fixed, check=True, capture_output=True, timeout=30)
    tasks = [example_tasks()[task_id] for task_id in (FIRST, PROJECTION, LATEST)]
    return run_demo(tmp_path_factory.mktemp("demo-after"), fixed, emailindex_db, tasks)


@pytest.fixture(scope="module")
def sql(emailindex_db: Path) -> Callable[..., list[sqlite3.Row]]:
    def query(statement: str, *args: Any) -> list[sqlite3.Row]:
        with sqlite3.connect(emailindex_db) as con:
            con.row_factory = sqlite3.Row
            return con.execute(statement, args).fetchall()

    return query


MATCH = "id IN (SELECT rowid FROM emails_fts WHERE emails_fts MATCH ?)"


def calls(output: RunnerOutput) -> list[ToolCall]:
    return [step for step in output.steps if isinstance(step, ToolCall)]


def result(call: ToolCall) -> Any:
    return json.loads(call.result_content[0]["text"])


def test_every_task_completes_with_thinking_estimated_usage_and_the_journal_agreeing(before_fix) -> None:
    assert set(before_fix) == set(example_tasks())
    for task_id, (output, journal) in before_fix.items():
        assert output.status == "completed", (task_id, output.status_reason)
        assert output.model == DEMO_MODEL_LABEL and output.final_answer
        turns = [step for step in output.steps if isinstance(step, ModelTurn)]
        assert turns and all(len(turn.thinking) == 1 and turn.thinking[0] for turn in turns), task_id
        assert {turn.usage.source for turn in turns} == {"estimated"}
        assert all(turn.usage.input_tokens > 0 and turn.usage.output_tokens > 0 for turn in turns)
        # Later turns read more: the estimate grows with what the model has been shown.
        assert turns[-1].usage.input_tokens > turns[0].usage.input_tokens, task_id
        journaled = journal_tool_calls(journal)
        assert [(c.tool, c.arguments, c.is_error) for c in journaled] == [
            (c.tool, c.arguments, c.is_error) for c in calls(output)
        ], task_id


def test_first_mention_walks_yearly_windows_then_lists_that_year(before_fix, sql) -> None:
    output, _ = before_fix[FIRST]
    earliest = sql(
        f"SELECT id, date, subject FROM emails WHERE {MATCH} ORDER BY date LIMIT 1", '"Ron Chinn"'
    )[0]
    year = int(earliest["date"][:4])
    made = calls(output)
    windows = [(c.arguments.get("date_from"), c.arguments.get("date_to")) for c in made[:-1]]
    expected = [(None, f"{FALLBACK_START_YEAR}-12-31")]
    expected += [(f"{y}-01-01", f"{y}-12-31") for y in range(FALLBACK_START_YEAR + 1, year + 1)]
    assert windows == expected
    assert all(c.tool == "count_emails" and c.arguments["keywords"] == "Ron Chinn" for c in made[:-1])
    assert [result(c)["count"] for c in made[:-1]][-1] > 0
    assert all(result(c)["count"] == 0 for c in made[:-2])
    listing = made[-1]
    assert listing.tool == "query_email_database"
    assert (listing.arguments["date_from"], listing.arguments["date_to"]) == (
        f"{year}-01-01",
        f"{year}-12-31",
    )
    assert f"#{earliest['id']}" in output.final_answer and earliest["subject"] in output.final_answer
    assert earliest["date"] in output.final_answer


def test_projection_meets_the_fts_rank_error_retries_without_fields_and_reports_it(before_fix, sql) -> None:
    output, _ = before_fix[PROJECTION]
    first, retry = calls(output)
    assert first.arguments["fields"] == ["date", "subject"] and first.is_error
    assert "no such column: fts.rank" in (first.error_text or "")
    assert {k: v for k, v in first.arguments.items() if k != "fields"} == retry.arguments
    assert not retry.is_error
    subjects = sql(
        f"SELECT subject FROM emails WHERE {MATCH} AND date >= '2024-01-01' AND date < '2025-01-01'",
        '"office" "move"',
    )
    assert subjects and all(row["subject"] in output.final_answer for row in subjects)
    assert "no such column: fts.rank" in output.final_answer


def test_count_latest_lookup_and_summaries_answer_from_the_live_results(before_fix, sql) -> None:
    count, _ = before_fix["count-dana-whitfield-2019"]
    (counted,) = calls(count)
    expected = sql(
        "SELECT count(*) AS n FROM emails WHERE (sender LIKE '%Dana Whitfield%' OR sender_name LIKE "
        "'%Dana Whitfield%') AND date >= '2019-01-01' AND date < '2020-01-01'"
    )[0]["n"]
    assert counted.tool == "count_emails" and result(counted) == {"count": expected}
    assert count.final_answer.startswith(f"{expected} emails from Dana Whitfield in 2019")

    latest, _ = before_fix[LATEST]
    newest = sql(
        "SELECT id, date, subject FROM emails WHERE sender_name LIKE '%Ron Chinn%' ORDER BY date DESC LIMIT 1"
    )[0]
    assert f"#{newest['id']}" in latest.final_answer and newest["subject"] in latest.final_answer
    assert calls(latest)[0].arguments == {"sender": "Ron Chinn", "date_from": f"{date.today().year}-01-01"}

    garage, _ = before_fix["parking-garage-closure-dates"]
    email = sql("SELECT id, body FROM emails WHERE subject = 'Parking garage resurfacing schedule'")[0]
    search, read = calls(garage)
    assert search.arguments == {"keywords": '"Parking garage resurfacing schedule"'}
    assert read.tool == "get_email" and read.arguments == {"email_id": email["id"]}
    closed = [s for s in " ".join(email["body"].split()).split(". ") if "closed" in s]
    assert closed and all(sentence.rstrip(".") in garage.final_answer for sentence in closed)

    summary, _ = before_fix["summarize-recent-project-alpha"]
    recent = sql(
        f"SELECT id, subject FROM emails WHERE {MATCH} ORDER BY date DESC LIMIT 4", '"Project Alpha"'
    )
    opened = [c.arguments["email_id"] for c in calls(summary) if c.tool == "get_email"]
    assert opened == [row["id"] for row in recent]
    assert all(row["subject"] in summary.final_answer for row in recent)

    history, _ = before_fix["ron-chinn-history"]
    pages = [c for c in calls(history) if c.tool == "query_email_database"]
    total = sql(f"SELECT count(*) AS n FROM emails WHERE {MATCH}", '"Ron Chinn"')[0]["n"]
    assert sum(len(result(page)["emails"]) for page in pages) == total
    assert [page.arguments.get("offset", 0) for page in pages] == list(range(0, total, 100))


def test_after_the_fixes_the_demo_uses_the_new_schema_and_makes_fewer_calls(before_fix, after_fix) -> None:
    before, _ = before_fix[FIRST]
    after, _ = after_fix[FIRST]
    (sorted_query,) = calls(after)
    assert sorted_query.arguments == {"keywords": "Ron Chinn", "sort_order": "date_asc", "limit": 1}
    assert len(calls(after)) < len(calls(before))
    # Same answer, one call.
    assert after.final_answer == before.final_answer

    projection, _ = after_fix[PROJECTION]
    (listed,) = calls(projection)
    assert not listed.is_error and listed.arguments["fields"] == ["date", "subject"]
    assert "Errors from the tools" not in projection.final_answer

    latest, _ = after_fix[LATEST]
    (newest,) = calls(latest)
    assert newest.arguments == {"sender": "Ron Chinn", "sort_order": "date_desc", "limit": 1}
    assert latest.final_answer == before_fix[LATEST][0].final_answer


def test_the_model_reads_parameter_roles_from_any_schema() -> None:
    """Other names, same roles: the plan follows descriptions and enums, not emailindex's spelling."""
    from pydantic_ai.messages import ModelRequest, ToolCallPart, UserPromptPart
    from pydantic_ai.models import ModelRequestParameters
    from pydantic_ai.models.function import AgentInfo
    from pydantic_ai.tools import ToolDefinition

    search = ToolDefinition(
        name="find_messages",
        description="Search messages and list the matches.",
        parameters_json_schema={
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "Full-text search terms."},
                "order": {
                    "type": "string",
                    "enum": ["relevance", "newest_first", "oldest_first"],
                    "description": "Sort order of the results.",
                },
                "max_results": {"type": "integer", "maximum": 25},
            },
        },
    )
    info = AgentInfo(
        function_tools=[search],
        allow_text_output=True,
        output_tools=[],
        model_settings=None,
        model_request_parameters=ModelRequestParameters(),
        instructions=None,
    )
    messages = [ModelRequest(parts=[UserPromptPart("When did Ada Lovelace first write to us?")])]
    response = EXAMPLE_AGENT.demo_model(messages, info)
    (call,) = [part for part in response.parts if isinstance(part, ToolCallPart)]
    assert call.tool_name == "find_messages"
    assert call.args == {"text": "Ada Lovelace", "order": "oldest_first", "max_results": 1}
