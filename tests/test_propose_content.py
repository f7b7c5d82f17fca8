"""`tasks propose` asks about a server's content, in the user's words, with answers it derived twice.

Two servers of our own, of the two shapes published servers have: a team
handbook whose tools answer in plain text (a listing of lines, markdown notes,
`Key: value` blocks) and an issue tracker that answers in JSON. Each is
explored and proposed once per module (one server start for exploring, one
for verifying), and the tasks are held to what a user would keep: at least
eight verified, of several shapes, three needing two calls or more, three
tools or more, no tool or parameter name or identifier in a prompt, at most
one negative case in five, every answer true of the server's own data (read
from the server module, never from the proposer), and replayed by the
baseline as plausible. A server whose answers move (the time, a random draw)
gets no task about them. The model path: with providers.phase0 naming a model
(a scripted OpenAI-compatible endpoint), the model rewords the questions and a
rewording that changes what is asked is not used.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from mcpipechekr.baseline import build_baseline
from mcpipechekr.cli import main
from mcpipechekr.config import load_config
from mcpipechekr.errors import UserError
from mcpipechekr.propose import ProposeOutcome, propose_tasks
from mcpipechekr.propose.reading import read_text
from mcpipechekr.tasks import Task

pytestmark = pytest.mark.xdist_group("test_propose_content")

SERVERS = Path(__file__).parent / "servers"
SHAPES = {"lookup", "count", "filter", "list", "superlative", "comparison", "chain", "relation", "search"}


def load_server(name: str) -> ModuleType:
    """The server's module, for its data: the oracle the proposed answers are checked against."""
    spec = importlib.util.spec_from_file_location(f"{name}_data", SERVERS / f"{name}_server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def project(root: Path, server: str, **extra: Any) -> Path:
    config = {
        "server": {"name": server, "command": sys.executable, "args": [str(SERVERS / f"{server}_server.py")]},
        "paths": {"tasks": "tasks.yaml", "runs": "runs", "home": "home"},
        **extra,
    }
    path = root / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture(scope="module")
def handbook(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ProposeOutcome]:
    config = project(tmp_path_factory.mktemp("handbook"), "handbook")
    return config, propose_tasks(load_config(config), count=10)


@pytest.fixture(scope="module")
def tracker(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ProposeOutcome]:
    config = project(tmp_path_factory.mktemp("tracker"), "tracker")
    return config, propose_tasks(load_config(config), count=10)


def assert_tasks_a_user_keeps(outcome: ProposeOutcome, parameters: set[str]) -> None:
    tasks = outcome.tasks
    assert len(tasks) >= 8, [refusal.reason for refusal in outcome.refused]
    shapes = {tag for task in tasks for tag in task.tags} & SHAPES
    assert len(shapes) >= 4, shapes
    assert sum(1 for task in tasks if len(task.reference_calls) >= 2) >= 3
    assert all(task.min_calls == len(task.reference_calls) for task in tasks)
    assert len({task.expected_tool for task in tasks}) >= 3
    trivial = [task for task in tasks if task.expected_result in (0, [], "", None)]
    assert len(trivial) <= len(tasks) // 5
    assert all("negative" in task.tags for task in trivial)
    non_trivial = [
        t for t in tasks if not isinstance(t.expected_result, bool) and t.expected_result not in (0, 1)
    ]
    assert len(non_trivial) >= 6
    for task in tasks:
        words = set(re.findall(r"[A-Za-z_]+", task.prompt))
        assert not words & {c.tool for c in task.reference_calls if "_" in c.tool}, task.prompt
        assert not {w for w in words if "_" in w} & parameters, task.prompt
        for call in task.reference_calls:  # no identifier the user could not know
            for value in call.arguments.values():
                if isinstance(value, str) and re.search(r"\d|-", value) and " " not in value:
                    assert value not in task.prompt, task.prompt
    assert len({task.prompt for task in tasks}) == len(tasks)


def assert_baseline_replays(config_path: Path, tasks: list[Task], tmp_path: Path) -> None:
    """Written as tasks.yaml, the tasks validate and the baseline finds every answer plausible."""
    from mcpipechekr.propose import new_task_file

    (config_path.parent / "tasks.yaml").write_text(new_task_file(tasks))
    validated = CliRunner().invoke(main, ["validate", "--config", str(config_path)], catch_exceptions=False)
    assert validated.exit_code == 0, validated.output
    outcome = build_baseline(load_config(config_path))
    assert outcome.problems == []
    for entry in outcome.baseline.tasks:
        assert entry.plausibility_score == 1.0, (entry.task_id, entry.plausibility_reason)


# --- a text server ---------------------------------------------------------------------------------


def test_a_text_server_gets_tasks_about_its_notes_and_people(
    handbook: tuple[Path, ProposeOutcome], tmp_path: Path
) -> None:
    config_path, outcome = handbook
    assert_tasks_a_user_keeps(outcome, {"slug", "query", "name"})
    data = load_server("handbook")
    notes = {note[1]: note for note in data.NOTES}
    people = {person[0]: person for person in data.PEOPLE}
    columns = {"author": 2, "status": 3, "updated": 4}
    checked = 0
    for task in outcome.tasks:
        quoted = re.findall(r'"([^"]+)"', task.prompt)
        field = re.match(r"What is the (\w+)(?: date)? of the (note|person) ", task.prompt)
        if field and field[2] == "note" and field[1] in columns:
            assert task.expected_result == notes[quoted[0]][columns[field[1]]], task.prompt
            checked += 1
        elif field and field[2] == "person" and field[1] in ("team", "role", "email", "joined"):
            index = {"team": 1, "role": 2, "joined": 3, "email": 4}[field[1]]
            assert task.expected_result == people[quoted[0]][index], task.prompt
            checked += 1
        elif task.prompt == "How many notes are there?":
            assert task.expected_result == len(data.NOTES)
            checked += 1
        elif task.prompt.startswith("Which note mentions"):
            holders = [n[1] for n in data.NOTES if quoted[0].lower() in data._markdown(n).lower()]
            assert holders == [task.expected_result], task.prompt
            checked += 1
        elif m := re.match(r'(How many|Which) people have team "(\w+)"', task.prompt):
            team = [p[0] for p in data.PEOPLE if p[1] == m[2]]
            assert task.expected_result == (len(team) if m[1] == "How many" else team), task.prompt
            checked += 1
        elif m := re.match(r"Which person has the (latest|earliest) joined date", task.prompt):
            ranked = sorted(data.PEOPLE, key=lambda p: p[3])
            assert task.expected_result == (ranked[-1] if m[1] == "latest" else ranked[0])[0]
            checked += 1
    assert checked >= 6, [task.prompt for task in outcome.tasks]
    assert_baseline_replays(config_path, outcome.tasks, tmp_path)


# --- a JSON server ---------------------------------------------------------------------------------


def test_a_json_server_gets_tasks_about_its_projects_and_issues(
    tracker: tuple[Path, ProposeOutcome], tmp_path: Path
) -> None:
    config_path, outcome = tracker
    assert_tasks_a_user_keeps(outcome, {"project_id", "issue_id", "text"})
    data = load_server("tracker")
    issues = {issue[1]: issue for issue in data.ISSUES}
    projects = {project["name"]: project for project in data.PROJECTS}
    columns = {"assignee": 3, "state": 4, "priority": 5, "opened": 6, "reporter": 9}
    checked = 0
    for task in outcome.tasks:
        quoted = re.findall(r'"([^"]+)"', task.prompt)
        field = re.match(r"What is the (\w+)(?: date)? of the (issue|project) \"", task.prompt)
        if field and field[2] == "issue" and field[1] in columns:
            assert task.expected_result == issues[quoted[0]][columns[field[1]]], task.prompt
            checked += 1
        elif field and field[2] == "project":
            assert task.expected_result == projects[quoted[0]][field[1]], task.prompt
            checked += 1
        elif m := re.match(r'(How many|Which) projects have status "(\w+)"', task.prompt):
            named = [p["name"] for p in data.PROJECTS if p["status"] == m[2]]
            assert task.expected_result == (len(named) if m[1] == "How many" else named), task.prompt
            checked += 1
        elif m := re.match(
            r"Which (issue|project) has the (latest|earliest) (opened|started) date", task.prompt
        ):
            rows = (
                [(i[6], i[1]) for i in data.ISSUES]
                if m[1] == "issue"
                else [(p["started"], p["name"]) for p in data.PROJECTS]
            )
            ranked = sorted(rows)
            assert task.expected_result == (ranked[-1] if m[2] == "latest" else ranked[0])[1], task.prompt
            checked += 1
        elif m := re.match(
            r"Which issues belong to the project with the (latest|earliest) started date", task.prompt
        ):
            ranked = sorted(data.PROJECTS, key=lambda p: p["started"])
            chosen = (ranked[-1] if m[1] == "latest" else ranked[0])["id"]
            assert task.expected_result == [i[1] for i in data.ISSUES if i[2] == chosen], task.prompt
            checked += 1
    assert checked >= 5, [task.prompt for task in outcome.tasks]
    chains = [task for task in outcome.tasks if len(task.reference_calls) >= 2]
    assert any(
        task.reference_calls[-1].tool == "get_issue" for task in chains
    )  # a field only the fetch gives
    assert_baseline_replays(config_path, outcome.tasks, tmp_path)


# --- answers that move --------------------------------------------------------------------------------


def test_a_graph_server_gets_questions_that_follow_a_relation_to_the_record_it_leads_to(
    tmp_path: Path,
) -> None:
    """Find the relation by searching its start, then open the record at its end: two calls, and the
    answer the end's own record gives, checked against the server's data."""
    outcome = propose_tasks(load_config(project(tmp_path, "graph")), count=12)
    data = load_server("graph")
    kinds = {name: kind for name, kind, _ in data.ENTITIES}
    ends = {(a, r): b for a, b, r in data.RELATIONS}
    hops = [task for task in outcome.tasks if "that" in task.prompt and "relation" in task.tags]
    assert len(hops) >= 2, [task.prompt for task in outcome.tasks]
    for task in hops:
        match = re.fullmatch(r'What is the entity type of the entity that "([^"]+)" (.+)\?', task.prompt)
        assert match, task.prompt
        end = ends[(match[1], match[2])]
        assert task.expected_result == kinds[end], task.prompt
        first, second = task.reference_calls
        assert (first.tool, first.arguments) == ("search_nodes", {"query": match[1]})
        assert second.arguments in ({"names": [end]}, {"query": end}), task.prompt
        assert end not in task.prompt


def test_answers_that_move_with_the_clock_or_between_calls_are_refused(tmp_path: Path) -> None:
    outcome = propose_tasks(load_config(project(tmp_path, "clock")), count=5)
    reasons = {refusal.prompt: refusal.reason for refusal in outcome.refused}
    assert reasons['What is the time for timezone "UTC"?'].startswith("it depends on the clock (")
    draw = reasons['What is the draw for player "north"?']
    assert draw.startswith("the replayed result gives") or draw.startswith("two replays gave different")
    # a yes or no over two random draws may come out the same twice by chance: the draws do not
    assert reasons['Is the draw for player "south" higher than for "north"?'].startswith(
        ("the replayed result gives", "two replays gave different")
    )
    assert sorted(task.prompt for task in outcome.tasks) == [
        'What is the desk for queue "billing"?',
        'What is the desk for queue "support"?',
    ]
    assert not any("ticket" in refusal.prompt for refusal in outcome.refused)  # a random id: never asked


# --- steering ------------------------------------------------------------------------------------------


def test_about_puts_its_subject_first_and_tools_keep_only_their_tasks(tmp_path: Path) -> None:
    config = load_config(project(tmp_path, "handbook"))
    about = propose_tasks(config, count=4, about="Mara Ellison")
    assert all(
        "Mara Ellison" in task.prompt
        or task.expected_result == "Mara Ellison"
        or "Mara Ellison" in json.dumps(task.expected_result)
        for task in about.tasks[:3]
    ), [t.prompt for t in about.tasks]
    only = propose_tasks(config, count=4, tools=["person"])
    assert only.tasks and {task.expected_tool for task in only.tasks} == {"person"}
    with pytest.raises(UserError, match=r"--tools: the server has no tool 'people' \(tools: list_notes, "):
        propose_tasks(config, count=4, tools=["people"])


# --- a model words the questions ------------------------------------------------------------------------


def test_with_a_phase0_model_the_model_rewords_and_a_rewording_that_changes_the_question_is_not_used(
    tmp_path: Path,
) -> None:
    from fakes.openai_server import FakeOpenAI, text_reply

    with FakeOpenAI() as fake:
        config_path = project(
            tmp_path,
            "handbook",
            providers={"endpoints": {"scripted": {"base_url": fake.base_url}}, "phase0": "scripted/writer"},
        )
        # The questions are numbered in the order they are tried; the first is the count of notes.
        fake.enqueue(
            text_reply(
                json.dumps(
                    {
                        "tasks": [],
                        "rewrites": [
                            {"id": 1, "prompt": "How many notes does our handbook hold right now?"},
                            {"id": 2, "prompt": "Who wrote the harbour note?"},  # drops the quoted title
                        ],
                    }
                )
            )
        )
        result = CliRunner().invoke(
            main, ["tasks", "propose", "--config", str(config_path), "--count", "8"], catch_exceptions=False
        )
        assert result.exit_code == 0, result.output
        (request,) = fake.requests
    sent = json.dumps(request)
    assert "Questions to reword" in sent and "How many notes are there?" in sent
    written = yaml.safe_load((tmp_path / "tasks.yaml").read_text())["tasks"]
    prompts = [task["prompt"] for task in written]
    assert "How many notes does our handbook hold right now?" in prompts
    reworded = next(t for t in written if t["prompt"] == "How many notes does our handbook hold right now?")
    assert reworded["expected_result"] == 14 and "reworded" in reworded["tags"]
    assert "Who wrote the harbour note?" not in prompts
    assert "asking scripted/writer for 8 tasks" in result.output


# --- reading text results -----------------------------------------------------------------------------


def test_text_results_are_read_as_records() -> None:
    log = read_text(
        "Commit history:\nCommit: 4f2a9c1\nAuthor: Ada Example\nDate: 2024-03-04 10:00:00+00:00\n"
        "Message: Note the changes\n\n\nCommit: 56684174\nAuthor: Ada Example\n"
        "Date: 2024-03-02 10:00:00+00:00\nMessage: Count apples\n"
    )
    (table,) = log.tables
    assert table.label == "Commit" and [r["Message"] for r in table.records] == [
        "Note the changes",
        "Count apples",
    ]
    assert table.records[1]["Commit"] == "56684174"  # an identifier's digits stay text
    listing = read_text("[FILE] harvest.csv      27 B\n[DIR] notes\n\nTotal: 1 files, 1 directories")
    assert listing.tables[0].records == [
        {"name": "harvest.csv", "type": "file", "size": "27 B"},
        {"name": "notes", "type": "dir"},
    ]
    assert listing.summary
    note = read_text(
        "# Budget 2026\nauthor: Tomas Reyes\ntags: money, travel\n\n## Attendees\n- Ines\n- Gil\n\nBody."
    )
    assert note.single == {
        "title": "Budget 2026",
        "author": "Tomas Reyes",
        "tags": ["money", "travel"],
        "Attendees": ["Ines", "Gil"],
        "text": "Body.",
    }
    assert read_text("month,kg\nmarch,12\napril,17\n").tables[0].records == [
        {"month": "march", "kg": 12},
        {"month": "april", "kg": 17},
    ]
    diff = read_text(
        "Staged changes:\ndiff --git a/N.md b/N.md\n--- /dev/null\n+++ b/N.md\n@@ -0,0 +1 @@\n+new\n"
    )
    assert diff.tables[0].records == [{"name": "N.md", "added lines": 1, "removed lines": 0}]
    assert read_text("The weather is fine today. Rain is expected tomorrow.").empty
