"""`mcpipechekr tasks propose` on real servers: what it writes validates, replays and runs.

Two servers of different shapes: the bundled example (emailindex: a count tool,
a listing with a total, a get-by-id) and the bookshop (a paged search without
totals, a get-by-ISBN, SQLite). Offline proposals are checked the way a user
would: `validate`, then the baseline replaying the reference calls and judging
them against expected_result, then Phase 1 with the demo agent. The model path
runs with a scripted pydantic-ai model: its prompt, its JSON parsed, its tasks
verified, and the ones whose answer does not replay (or that call a tool that
writes) refused. Expected values come from the servers' own data, never from
the proposer.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from mcpipechekr._util.commands import script_command
from mcpipechekr._util.process_group import process_running
from mcpipechekr.artifacts import create_run_dir, read_trace
from mcpipechekr.artifacts.trace import ToolCall
from mcpipechekr.baseline import build_baseline
from mcpipechekr.cli import main
from mcpipechekr.config import load_config
from mcpipechekr.errors import UserError
from mcpipechekr.propose import propose_tasks
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.runners.execute import run_phase1
from mcpipechekr.tasks import TASKS_TEMPLATE, load_tasks

SERVERS = Path(__file__).parent / "servers"
EMAILINDEX = Path(__file__).resolve().parents[1] / "examples" / "emailindex"


def write_config(root: Path, server: dict[str, Any]) -> Path:
    config = {"server": server, "paths": {"tasks": "tasks.yaml", "runs": "runs", "home": "home"}}
    path = root / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture
def bookshop(tmp_path: Path) -> Path:
    return write_config(
        tmp_path,
        {
            "name": "bookshop",
            "command": sys.executable,
            "args": [str(SERVERS / "bookshop_server.py")],
            "cwd": str(tmp_path),
            "env": {"BOOKSHOP_DB": str(tmp_path / "shop.db")},
        },
    )


@pytest.fixture
def emailindex(tmp_path: Path, emailindex_db: Path) -> Path:
    return write_config(
        tmp_path,
        {
            "name": "emailindex",
            "command": sys.executable,
            "args": ["server.py"],
            "cwd": str(EMAILINDEX),
            "env": {"EMAILINDEX_DB": str(emailindex_db)},
        },
    )


def cli(*args: str) -> Any:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def propose_validate_replay_run(config_path: Path) -> list[dict[str, Any]]:
    """The whole user path: propose, validate, baseline, Phase 1 with the demo agent; the tasks written."""
    result = cli("tasks", "propose", "--config", str(config_path), "--count", "10")
    assert result.exit_code == 0, result.output
    assert "task(s) written to" in result.output
    tasks_path = config_path.parent / "tasks.yaml"
    written = yaml.safe_load(tasks_path.read_text())["tasks"]
    assert len(written) >= 8

    validated = cli("validate", "--config", str(config_path))
    assert validated.exit_code == 0, validated.output
    assert f"({len(written)} tasks)" in validated.output

    config = load_config(config_path)
    outcome = build_baseline(config)
    assert outcome.problems == []
    assert sorted(outcome.baselined) == sorted(task["task_id"] for task in written)
    for entry in outcome.baseline.tasks:  # the replayed result contains each expected_result
        assert entry.method == "reference_calls"
        assert entry.plausibility_score == 1.0, (entry.task_id, entry.plausibility_reason)

    taskfile = load_tasks(config.paths.tasks)
    run = create_run_dir(config.paths.runs)
    paths = run_phase1(
        config, run, taskfile.tasks, [ProviderSpec(provider="demo")], concurrency=2, progress=False
    )
    traces = [read_trace(path) for path in paths]
    assert len(traces) == len(written)
    for trace in traces:
        assert trace.status == "completed", (trace.task_id, trace.status_reason)
        assert any(isinstance(step, ToolCall) for step in trace.steps), trace.task_id

    for task in written:  # prompts a user would write: no tool names
        assert not any(call["tool"] in task["prompt"] for call in task["reference_calls"]), task["prompt"]
        assert task["task_type"] == "deterministic" and task["expected_result"] not in (None, "")
    splits = [task["split"] for task in written]
    assert 1 <= splits.count("holdout") <= len(written) // 3, splits
    return written


@pytest.mark.slow
def test_bookshop_proposals_validate_replay_and_run(bookshop: Path) -> None:
    written = propose_validate_replay_run(bookshop)
    with sqlite3.connect(bookshop.parent / "shop.db") as db:  # answers from the shop's own rows
        books = {row[0]: row for row in db.execute("SELECT isbn, title, author, price, stock FROM books")}
    by_title = {row[1]: row for row in books.values()}
    checked = 0
    for task in written:
        calls = task["reference_calls"]
        if calls[-1]["tool"] == "get_book":
            row = books[calls[-1]["arguments"]["isbn"]]
            assert task["expected_result"] in row, task
            checked += 1
        elif 'the book "' in task["prompt"]:
            title = task["prompt"].split('"')[1]
            assert task["expected_result"] in by_title[title], task
            checked += 1
        elif task["prompt"].startswith("How many books have author"):
            author = task["prompt"].split('"')[1]
            assert task["expected_result"] == sum(1 for row in books.values() if row[2] == author), task
            checked += 1
    assert checked >= 4
    # a search-then-fetch chain: the field only the fetch gives (stock), in two calls
    chains = [
        task
        for task in written
        if [c["tool"] for c in task["reference_calls"]] == ["search_books", "get_book"]
    ]
    assert chains and all(task["min_calls"] == 2 for task in chains)
    assert all(task["expected_tool"] for task in written)
    assert {task["expected_tool"] for task in written} >= {"search_books", "get_book"}


@pytest.mark.slow
def test_emailindex_proposals_validate_replay_and_run(emailindex: Path, emailindex_db: Path) -> None:
    written = propose_validate_replay_run(emailindex)
    with sqlite3.connect(emailindex_db) as db:
        total = db.execute("SELECT COUNT(*) FROM emails").fetchone()[0]
    counts = [task for task in written if task["prompt"].startswith("How many")]
    assert counts
    plain = [task for task in counts if task["reference_calls"][-1]["arguments"] == {}]
    assert all(task["expected_result"] == total for task in plain)
    assert {task["expected_tool"] for task in written} >= {"get_email"}


def test_an_existing_task_file_is_kept_unless_appended_to(bookshop: Path) -> None:
    tasks_path = bookshop.parent / "tasks.yaml"
    original = (
        "# my own tasks\n"
        "tasks:\n"
        "  - task_id: mine\n"
        "    prompt: Which books does Ines Okafor sell?\n"
        "    task_type: open_ended\n"
        "    # a comment kept\n"
        "\n"
        "selection_cases:\n"
        "  - query: find a book\n"
        "    expected_tool: search_books\n"
    )
    tasks_path.write_text(original)
    refused = cli("tasks", "propose", "--config", str(bookshop))
    assert refused.exit_code == 2
    assert (
        "tasks.yaml exists and is not overwritten: --append to add to it, or --output PATH" in refused.output
    )
    assert tasks_path.read_text() == original

    both = cli("tasks", "propose", "--config", str(bookshop), "--append", "--output", "x.yaml")
    assert both.exit_code == 2 and "mutually exclusive" in both.output

    appended = cli("tasks", "propose", "--config", str(bookshop), "--append", "--count", "3")
    assert appended.exit_code == 0, appended.output
    text = tasks_path.read_text()
    assert text.startswith(original.split("\nselection_cases")[0])
    assert "# my own tasks" in text and "# a comment kept" in text
    taskfile = load_tasks(tasks_path)
    assert taskfile.task_ids()[0] == "mine" and len(taskfile.tasks) == 4
    assert [case.query for case in taskfile.selection_cases] == ["find a book"]
    again = cli("tasks", "propose", "--config", str(bookshop), "--append", "--count", "3")
    assert again.exit_code == 0, again.output
    prompts = [task.prompt for task in load_tasks(tasks_path).tasks]
    assert len(prompts) == 7 and len(set(prompts)) == 7  # appending asks nothing twice
    text = tasks_path.read_text()

    other = bookshop.parent / "more.yaml"
    written = cli("tasks", "propose", "--config", str(bookshop), "--output", str(other), "--count", "2")
    assert written.exit_code == 0, written.output
    assert len(load_tasks(other).tasks) == 2
    assert tasks_path.read_text() == text


def test_tools_that_may_write_are_never_called(tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    config_path = write_config(
        tmp_path,
        {
            "name": "destructive",
            "command": sys.executable,
            "args": [str(SERVERS / "destructive_server.py")],
            "env": {"MARKER_DIR": str(markers)},
        },
    )
    propose_tasks(load_config(config_path), count=5)
    assert list(markers.iterdir()) == []


# --- the model path ------------------------------------------------------------------------------


def scripted_model(answer: dict[str, Any], seen: list[str]) -> FunctionModel:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info.instructions or "")
        return ModelResponse(parts=[TextPart(json.dumps(answer))])

    return FunctionModel(respond)


def test_a_model_writes_tasks_and_those_that_do_not_replay_are_refused(
    bookshop: Path, tmp_path: Path
) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    answer = {
        "tasks": [
            {  # right: the stock of a book the exploration saw, found by title then fetched
                "prompt": "Is The Quiet Harbour in stock, and how many copies are there?",
                "task_type": "deterministic",
                "reference_calls": [
                    {"tool": "search_books", "arguments": {"text": "The Quiet Harbour"}},
                    {"tool": "get_book", "arguments": {"isbn": "978-0-00-000001-1"}},
                ],
                "expected_result": {"stock": 4},
                "tags": ["Stock Check"],
            },
            {  # wrong answer: the server says 18.5
                "prompt": "How much does The Quiet Harbour cost?",
                "reference_calls": [{"tool": "get_book", "arguments": {"isbn": "978-0-00-000001-1"}}],
                "expected_result": 99.0,
            },
            {  # a tool the server does not have
                "prompt": "Who wrote Night Trains?",
                "reference_calls": [{"tool": "book_author", "arguments": {"title": "Night Trains"}}],
                "expected_result": "Tomas Reyes",
            },
            {  # an id the server refuses
                "prompt": "What is the title of book 123?",
                "reference_calls": [{"tool": "get_book", "arguments": {"isbn": "123"}}],
                "expected_result": "Anything",
            },
        ]
    }
    seen: list[str] = []
    outcome = propose_tasks(load_config(bookshop), count=5, model=scripted_model(answer, seen))

    assert len(seen) == 1
    instructions = seen[0]
    assert "search_books" in instructions and "get_book" in instructions  # the tools
    assert "The Quiet Harbour" in instructions and "978-0-00-000001-1" in instructions  # what was observed
    assert "Never name a tool" in instructions

    assert "Questions to reword" in instructions  # the templates' questions, each with its answer
    # the model's own task comes first; the templates' questions follow, verified the same way
    assert [task.prompt for task in outcome.tasks if "model" in task.tags] == [answer["tasks"][0]["prompt"]]
    task = outcome.tasks[0]
    assert task.expected_tool == "get_book" and task.min_calls == 2
    assert task.expected_result == {"stock": 4}
    assert "stock-check" in task.tags and "model" in task.tags
    reasons = {refusal.prompt: refusal.reason for refusal in outcome.refused if refusal.template == "model"}
    assert reasons == {
        "How much does The Quiet Harbour cost?": "the replayed result does not contain 99.0",
        "Who wrote Night Trains?": "reference call 1: the server has no tool 'book_author'",
        "What is the title of book 123?": "reference call 1 (get_book) failed: "
        "Error executing tool get_book: no book with ISBN 123",
    }


def test_a_model_task_that_calls_a_tool_that_writes_is_refused_without_calling_it(tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    config_path = write_config(
        tmp_path,
        {
            "name": "destructive",
            "command": sys.executable,
            "args": [str(SERVERS / "destructive_server.py")],
            "env": {"MARKER_DIR": str(markers)},
        },
    )
    answer = {
        "tasks": [
            {
                "prompt": "Clean everything up.",
                "reference_calls": [{"tool": "delete_everything", "arguments": {}}],
                "expected_result": "delete_everything ran",
            }
        ]
    }
    outcome = propose_tasks(load_config(config_path), count=1, model=scripted_model(answer, []))
    assert outcome.tasks == []
    assert outcome.refused[0].reason.startswith("reference call 1: 'delete_everything' may change state")
    assert list(markers.iterdir()) == []


def test_about_one_task_in_four_is_held_out_spread_over_the_tools() -> None:
    from mcpipechekr.propose import assign_splits
    from mcpipechekr.tasks import Task

    tasks = [
        Task(task_id=f"t{i}", prompt="p", task_type="deterministic", expected_tool=tool)
        for i, tool in enumerate(["a"] * 8 + ["b"] * 4)
    ]
    split = assign_splits(tasks)
    assert [task.task_id for task in split] == [task.task_id for task in tasks]
    held = [task for task in split if task.split == "holdout"]
    assert len(held) == 3
    assert sorted(task.expected_tool for task in held) == ["a", "a", "b"]


def test_a_split_other_than_train_or_holdout_is_reported_at_its_line(tmp_path: Path) -> None:
    from mcpipechekr._util.yamlsrc import ConfigFileError

    path = tmp_path / "tasks.yaml"
    task = "tasks:\n  - task_id: one\n    prompt: p\n    task_type: deterministic\n"
    path.write_text(task + "    split: test\n")
    with pytest.raises(ConfigFileError) as raised:
        load_tasks(path)
    assert "tasks.yaml:5: task 'one' field 'split'" in str(raised.value)
    path.write_text("tasks:\n  - task_id: one\n    prompt: p\n    task_type: deterministic\n")
    assert load_tasks(path).tasks[0].split == "train"


def test_the_model_flag_reaches_a_configured_provider(bookshop: Path) -> None:
    from fakes.openai_server import FakeOpenAI, text_reply

    task = {
        "prompt": "Who wrote Night Trains?",
        "task_type": "deterministic",
        "reference_calls": [{"tool": "search_books", "arguments": {"text": "Night Trains"}}],
        "expected_result": "Tomas Reyes",
        "tags": ["author"],
    }
    with FakeOpenAI() as fake:
        fake.enqueue(text_reply(json.dumps({"tasks": [task]})))
        data = yaml.safe_load(bookshop.read_text())
        data["providers"] = {"endpoints": {"scripted": {"base_url": fake.base_url}}}
        bookshop.write_text(yaml.safe_dump(data))
        result = cli(
            "tasks", "propose", "--config", str(bookshop), "--model", "scripted/writer", "--count", "1"
        )
        assert result.exit_code == 0, result.output
        (request,) = fake.requests
    sent = json.dumps(request)
    assert "search_books" in sent and "Never name a tool" in sent
    written = load_tasks(bookshop.parent / "tasks.yaml").tasks
    assert [(t.prompt, t.expected_result, t.expected_tool) for t in written] == [
        ("Who wrote Night Trains?", "Tomas Reyes", "search_books")
    ]
    assert "asking scripted/writer for 1 tasks" in result.output

    bad = cli("tasks", "propose", "--config", str(bookshop), "--model", "nonsense", "--output", "x.yaml")
    assert bad.exit_code == 2 and "--model: 'nonsense' names no provider" in bad.output


def test_a_secret_the_server_shows_is_neither_sent_to_the_model_nor_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "vlt-7Q2x9Jk4mN8pR3sT"
    monkeypatch.setenv("VAULT_ACCESS_TOKEN", secret)
    config_path = write_config(
        tmp_path,
        {
            "name": "settings-echo",
            "command": sys.executable,
            "args": [str(SERVERS / "settings_echo_server.py")],
        },
    )
    answer = {
        "tasks": [
            {
                "prompt": f"Is {secret} the right vault token?",
                "reference_calls": [{"tool": "connect", "arguments": {"vault_access_token": secret}}],
                "expected_result": secret,
            }
        ]
    }
    seen: list[str] = []
    outcome = propose_tasks(load_config(config_path), count=3, model=scripted_model(answer, seen))
    assert "show_settings" in seen[0] and "${VAULT_ACCESS_TOKEN}" in seen[0]  # observed, masked
    assert secret not in seen[0]
    assert outcome.tasks == []
    (refusal,) = outcome.refused
    assert refusal.prompt == "Is ${VAULT_ACCESS_TOKEN} the right vault token?"
    assert refusal.reason.startswith("it holds a secret of the configuration")

    offline = propose_tasks(load_config(config_path), count=10)
    assert secret not in repr(offline)


# --- right after `init` ---------------------------------------------------------------------------


def init_bookshop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project made by `mcpipechekr init` for a copy of the bookshop (outside any git checkout)."""
    (tmp_path / "shop-server").mkdir()
    shutil.copy(SERVERS / "bookshop_server.py", tmp_path / "shop-server" / "bookshop_server.py")
    monkeypatch.chdir(tmp_path)
    result = cli(
        "init",
        "--dir",
        "shop",
        "--command",
        "python shop-server/bookshop_server.py",
        "--env",
        f"BOOKSHOP_DB={tmp_path / 'shop.db'}",
    )
    assert result.exit_code == 0, result.output
    return tmp_path / "shop" / "config.yaml"


def test_propose_right_after_init_replaces_the_untouched_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config_path = init_bookshop(tmp_path, monkeypatch)
    tasks_path = config_path.parent / "tasks.yaml"
    assert tasks_path.read_text(encoding="utf-8") == TASKS_TEMPLATE

    result = cli("tasks", "propose", "--config", str(config_path), "--count", "4")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    replacing = f"{tasks_path} holds only the example `{script_command('mcpipechekr')} init` wrote"
    assert f"{replacing}: the proposed tasks replace it" in lines
    assert lines[-1].startswith(f"4 task(s) replaced init's example in {tasks_path} (")
    taskfile = load_tasks(tasks_path)
    assert len(taskfile.tasks) == 4 and "example-task" not in taskfile.task_ids()
    assert all(task.reference_calls for task in taskfile.tasks)
    validated = cli("validate", "--config", str(config_path))
    assert validated.exit_code == 0, validated.output


def test_propose_never_replaces_an_example_the_user_edited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config_path = init_bookshop(tmp_path, monkeypatch)
    tasks_path = config_path.parent / "tasks.yaml"
    edited = TASKS_TEMPLATE.replace("    # min_calls: 1\n", "    min_calls: 1\n")
    tasks_path.write_text(edited, encoding="utf-8")

    refused = cli("tasks", "propose", "--config", str(config_path))
    assert refused.exit_code == 2
    assert f"{tasks_path} exists and is not overwritten: --append to add to it, or --output PATH" in (
        refused.output
    )
    assert tasks_path.read_text(encoding="utf-8") == edited


# --- the two servers: exploring, and the fresh one that verifies ------------------------------------


def lifetimes_config(tmp_path: Path, **env: str) -> Path:
    events = tmp_path / "lifetimes"
    events.mkdir()
    return write_config(
        tmp_path,
        {
            "name": "lifetimes",
            "command": sys.executable,
            "args": [str(SERVERS / "lifetimes_server.py")],
            "env": {"LIFETIME_DIR": str(events), "LIFETIME_PEERS": "2", **env},
        },
    )


def lifetime_events(config_path: Path) -> list[tuple[str, int]]:
    lines = (config_path.parent / "lifetimes" / "events").read_text().splitlines()
    return [(event, int(pid)) for event, pid in (line.split() for line in lines)]


def assert_nothing_left(events: list[tuple[str, int]]) -> None:
    """Every server process recorded is gone, and no thread still waits on a start."""
    assert [pid for _, pid in events if process_running(pid)] == []
    assert [thread.name for thread in threading.enumerate() if thread.name.startswith("start ")] == []


def test_the_verifying_server_starts_while_the_first_explores(tmp_path: Path) -> None:
    config_path = lifetimes_config(tmp_path)
    propose_tasks(load_config(config_path), count=3)
    events = lifetime_events(config_path)
    # Each copy waits, before it answers, until two have started: one after the other, the first would
    # have stopped before the second started. Both starts come before either stop.
    assert [event for event, _ in events] == ["start", "start", "stop", "stop"], events
    assert len({pid for _, pid in events}) == 2
    assert_nothing_left(events)
    logs = config_path.parent / "home" / "logs"
    assert sorted(path.name for path in logs.iterdir()) == [
        "lifetimes-verify.stderr.log",
        "lifetimes.stderr.log",
    ]


def test_the_verifying_server_is_stopped_when_proposing_fails(tmp_path: Path) -> None:
    config_path = lifetimes_config(tmp_path)

    def unreachable(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise ConnectionError("the provider is unreachable")

    with pytest.raises(UserError, match="could not propose tasks: ConnectionError"):
        propose_tasks(load_config(config_path), count=3, model=FunctionModel(unreachable))
    events = lifetime_events(config_path)
    assert [event for event, _ in events][:2] == ["start", "start"]
    assert_nothing_left(events)


def test_the_verifying_server_is_stopped_on_ctrl_c(tmp_path: Path) -> None:
    config_path = lifetimes_config(tmp_path)

    def interrupt(text: str) -> None:
        if text.startswith("verifying"):  # exploration is done, the fresh server is up or coming up
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        propose_tasks(load_config(config_path), count=3, progress=interrupt)
    events = lifetime_events(config_path)
    assert [event for event, _ in events][:2] == ["start", "start"]
    assert_nothing_left(events)
