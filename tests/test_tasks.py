"""tasks.yaml: the model, every error located at its line, task selection and the content hash."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from mcpipechekr._util.yamlsrc import ConfigFileError
from mcpipechekr.errors import UserError
from mcpipechekr.tasks import load_tasks, select_tasks, task_file_hash

ROOT = Path(__file__).resolve().parents[1]

GOOD = """
# comment
tasks:
  - task_id: find-first
    prompt: Find the first email about X.
    task_type: deterministic
    expected_tool: query
    min_calls: 2
    reference_calls:
      - tool: count
        arguments: {keywords: X, date_to: "2013-12-31"}
      - tool: query
    tags: [search, dates]
  - task_id: summarize
    prompt: Summarize the recent discussion about Y.
    task_type: open_ended
    expected_result: {summary: "..."}
    tags: [summary]
  - task_id: count-2019
    prompt: How many emails in 2019?
    task_type: deterministic
selection_cases:
  - query: how many emails from Ann
    expected_tool: count
"""


def write(tmp_path: Path, text: str, name: str = "tasks.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def problems_of(path: Path) -> list[str]:
    with pytest.raises(ConfigFileError) as info:
        load_tasks(path)
    return [str(problem) for problem in info.value.problems]


def test_good_file_loads(tmp_path):
    taskfile = load_tasks(write(tmp_path, GOOD))
    assert taskfile.task_ids() == ["find-first", "summarize", "count-2019"]
    first = taskfile.tasks[0]
    assert (first.task_type, first.expected_tool, first.min_calls, first.tags) == (
        "deterministic",
        "query",
        2,
        ["search", "dates"],
    )
    assert [(call.tool, call.arguments) for call in first.reference_calls] == [
        ("count", {"keywords": "X", "date_to": "2013-12-31"}),
        ("query", {}),
    ]
    assert taskfile.tasks[1].expected_result == {"summary": "..."}
    assert taskfile.tasks[2].expected_result is None and taskfile.tasks[2].reference_calls == []
    assert [(case.query, case.expected_tool) for case in taskfile.selection_cases] == [
        ("how many emails from Ann", "count")
    ]


def test_root_tasks_file_is_valid():
    taskfile = load_tasks(ROOT / "tasks.yaml")
    ids = taskfile.task_ids()
    assert "find-first-email-ron-chinn" in ids and "summarize-recent-project-alpha" in ids
    assert {task.task_type for task in taskfile.tasks} == {"deterministic", "open_ended"}


def test_every_problem_is_reported_with_its_line(tmp_path):
    path = write(
        tmp_path,
        """
        tasks:
          - task_id: find-first
            prompt: Find it.
            task_type: lookup
            min_calls: 0
          - task_id: Bad_ID
            prompt: "   "
            task_type: open_ended
            tags: [ok, Not Ok]
          - prompt: no id here
            task_type: deterministic
            expected_tool: [a, b]
            reference_calls:
              - arguments: {x: 1}
              - tool: t
                arguments: [1]
                note: hi
          - task_id: find-first
            task_type: deterministic
        selection_cases:
          - query: ""
            expected_tool: t
        """,
    )
    slug = "must be a slug: lowercase letters, digits and '-', starting with a letter or digit"
    assert problems_of(path) == [
        f"{path}:4: task 'find-first' field 'task_type': must be deterministic or open_ended",
        f"{path}:5: task 'find-first' field 'min_calls': must be at least 1",
        f"{path}:6: task 'Bad_ID' field 'task_id': {slug}, e.g. find-first-email",
        f"{path}:7: task 'Bad_ID' field 'prompt': must not be empty",
        f"{path}:9: task 'Bad_ID' field 'tags': tag 'Not Ok' {slug}",
        f"{path}:10: task #3 field 'task_id': is required",
        f"{path}:12: task #3 field 'expected_tool': must be a string",
        f"{path}:14: task #3 field 'reference_calls[0].tool': is required",
        f"{path}:16: task #3 field 'reference_calls[1].arguments': must be a mapping of names to values",
        f"{path}:17: task #3 field 'reference_calls[1].note': unknown field (known: tool, arguments)",
        f"{path}:18: task 'find-first' field 'task_id': duplicate id (first used at line 2)",
        f"{path}:18: task 'find-first' field 'prompt': is required",
        f"{path}:21: selection case #1 field 'query': must not be empty",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tasks: [\n", ":2:1: YAML syntax error: expected the node content, but found '<stream end>'"),
        ("", ": task file is empty: expected a mapping of fields"),
        ("- task_id: a\n", ":1: the top level must be a mapping of fields, not a list"),
        ("tasks: []\n", ":1: field 'tasks': must have at least 1 item(s)"),
        ("tasks: nope\n", ":1: field 'tasks': must be a list"),
        (
            "task:\n  - task_id: a\n",
            (
                ":1: field 'tasks': is required",
                ":1: field 'task': unknown field (known: tasks, selection_cases)",
            ),
        ),
        (
            "tasks:\n  - task_id: a\n    prompt: p\n    prompt: q\n    task_type: deterministic\n",
            ":4: duplicate key 'tasks[0].prompt' (first given at line 3)",
        ),
        (
            "tasks:\n  - task_id: a\n    prompt: p\n    task_type: deterministic\n    taskType: x\n",
            ":5: task 'a' field 'taskType': unknown field (known: task_id, prompt, task_type, expected_tool, "
            "expected_result, min_calls, reference_calls, allow_writes, tags, split)",
        ),
    ],
)
def test_file_level_problems(tmp_path, text, expected):
    path = tmp_path / "tasks.yaml"
    path.write_text(text, encoding="utf-8")
    expected = [expected] if isinstance(expected, str) else list(expected)
    assert problems_of(path) == [f"{path}{suffix}" for suffix in expected]


def test_missing_file(tmp_path):
    assert problems_of(tmp_path / "tasks.yaml") == [f"{tmp_path / 'tasks.yaml'}: task file not found"]


def test_relative_display_inside_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "tasks:\n  - task_id: a\n    prompt: p\n    task_type: x\n")
    assert problems_of(Path("tasks.yaml")) == [
        "tasks.yaml:4: task 'a' field 'task_type': must be deterministic or open_ended"
    ]


def test_problem_lines_for_later_checks(tmp_path):
    taskfile = load_tasks(write(tmp_path, GOOD))
    problem = taskfile.problem(("tasks", 0, "reference_calls", 1, "tool"), "the server has no tool 'query'")
    assert str(problem) == (
        f"{tmp_path / 'tasks.yaml'}:11: task 'find-first' field 'reference_calls[1].tool': "
        "the server has no tool 'query'"
    )


# --- selection -----------------------------------------------------------------------------------


def test_select_by_id_tag_or_both(tmp_path):
    taskfile = load_tasks(write(tmp_path, GOOD))

    def ids(**kwargs) -> list[str]:
        return [task.task_id for task in select_tasks(taskfile, **kwargs)]

    assert ids() == ["find-first", "summarize", "count-2019"]
    assert ids(task_ids=["count-2019", "find-first"]) == ["find-first", "count-2019"]  # file order
    assert ids(tags=["summary"]) == ["summarize"]
    assert ids(task_ids=["count-2019"], tags=["search"]) == ["find-first", "count-2019"]


def test_unknown_id_or_tag_is_an_error_listing_what_exists(tmp_path):
    taskfile = load_tasks(write(tmp_path, GOOD))
    with pytest.raises(UserError) as info:
        select_tasks(taskfile, task_ids=["find-frist"])
    assert info.value.message == "unknown task id(s): find-frist (known: find-first, summarize, count-2019)"
    with pytest.raises(UserError) as info:
        select_tasks(taskfile, tags=["serch"])
    assert info.value.message == "no task has tag(s): serch (tags in use: dates, search, summary)"


# --- hash ----------------------------------------------------------------------------------------


def test_hash_ignores_comments_and_layout_but_not_content(tmp_path):
    original = task_file_hash(write(tmp_path, GOOD, "a.yaml"))
    reformatted = GOOD.replace("# comment\n", "# another comment\n\n").replace(
        "tags: [search, dates]", "tags:\n      - search\n      - dates"
    )
    assert task_file_hash(write(tmp_path, reformatted, "b.yaml")) == original
    edited = GOOD.replace("How many emails in 2019?", "How many emails in 2020?")
    assert task_file_hash(write(tmp_path, edited, "c.yaml")) != original
    assert original.startswith("sha256:") and len(original) == len("sha256:") + 64


REFERENCES = """
tasks:
  - task_id: inbox-of
    prompt: Count the messages in ${MAILBOX}'s inbox since ${SINCE:-2020}; $${LITERAL} stays.
    task_type: deterministic
    reference_calls:
      - tool: count
        arguments: {owner: "${MAILBOX}"}
"""


def test_references_are_substituted_from_the_environment_over_the_dotenv_beside_the_file(tmp_path):
    path = write(tmp_path, REFERENCES)
    (tmp_path / ".env").write_text("MAILBOX=ann\nSINCE=2019\n", encoding="utf-8")
    task = load_tasks(path, environ={"SINCE": "2021"}).tasks[0]
    assert task.prompt == "Count the messages in ann's inbox since 2021; ${LITERAL} stays."
    assert task.reference_calls[0].arguments == {"owner": "ann"}


def test_an_unset_reference_is_an_error_naming_the_variable_at_its_line(tmp_path):
    path = write(tmp_path, REFERENCES)
    with pytest.raises(ConfigFileError) as error:
        load_tasks(path, environ={})
    assert str(error.value).splitlines() == [
        f"{path}:3: task 'inbox-of' field 'prompt': environment variable 'MAILBOX' is not set: set it, "
        "add it to .env beside the file, or write ${MAILBOX:-default}",
        f"{path}:7: task 'inbox-of' field 'reference_calls[0].arguments.owner': environment variable "
        "'MAILBOX' is not set: set it, add it to .env beside the file, or write ${MAILBOX:-default}",
    ]
