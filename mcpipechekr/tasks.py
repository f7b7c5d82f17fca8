"""tasks.yaml: the tasks agents run blind against the server, and tool-selection cases.

A task is a prompt a real user would give an agent that has the server's tools.
`deterministic` tasks have one right answer (Phase 0 records it as the
baseline); `open_ended` ones are judged against a reference answer instead.
`reference_calls` reproduce the answer with no model at all, which both proves
the task is solvable on today's server and gives the cost of an optimal run.
They run unattended, so the baseline runs them only on tools annotated
read-only unless the task says `allow_writes: true` (`baseline.write_call_problems`).

Problems are reported like config.yaml's, as `tasks.yaml:LINE: task 'ID' field
'NAME': message`, all at once; duplicate ids are caught on the raw file so they
are reported together with every other mistake.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, PrivateAttr, field_validator

from mcpipechekr._util.fields import Count, StrictModel, json_ints_in_range, not_blank, slug_checker
from mcpipechekr._util.hashing import sha256_json
from mcpipechekr._util.safe_read import read_user_text, resolved
from mcpipechekr._util.yamlsrc import (
    Loc,
    Problem,
    YamlDocument,
    display_path,
    environment_with_dotenv,
    field_path,
    interpolate,
    load_yaml,
    read_dotenv,
    validate_document,
)
from mcpipechekr.errors import InputError, UserError

DEFAULT_TASKS_FILE = "tasks.yaml"
MAX_TASK_ID = 100
"""Longest task id: ids become file names (`traces/<id>__<provider>__r001.json`, and its journal's
`.jsonl` with a temporary name's 22 more characters while written), which must stay under 255 bytes."""
_SLUG, _SLUG_RULE, _slug = slug_checker(underscore=False, example="find-first-email")


class ReferenceCall(StrictModel):
    """One tool call of the known-good solution."""

    tool: str = Field(min_length=1, description="Name of the server's tool.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="The call's arguments, as JSON.")

    _arguments = field_validator("arguments")(json_ints_in_range)


class Task(StrictModel):
    """One task an agent is given, with what is known about its answer."""

    task_id: str = Field(
        max_length=MAX_TASK_ID, description="Unique slug naming the task in reports and file names."
    )
    prompt: str = Field(description="The exact text the agent receives.")
    task_type: Literal["deterministic", "open_ended"] = Field(
        description="`deterministic`: one right answer; `open_ended`: judged against a reference answer."
    )
    expected_tool: str | None = Field(default=None, description="The tool a good agent calls for this task.")
    expected_result: Any = Field(
        default=None, description="The right answer, as JSON; filled by the baseline phase."
    )
    min_calls: Count | None = Field(
        default=None, ge=1, le=10_000, description="Fewest tool calls that can solve the task."
    )
    reference_calls: list[ReferenceCall] = Field(
        default_factory=list, description="Tool calls that reproduce the answer without a model."
    )
    allow_writes: bool = Field(
        default=False,
        description="true: the baseline may run reference_calls on tools not annotated read-only "
        "(readOnlyHint: true and not destructiveHint: true); without it, it refuses to.",
    )
    tags: list[str] = Field(default_factory=list, description="Slugs for selecting tasks with --tag.")
    split: Literal["train", "holdout"] = Field(
        default="train",
        description="`train`: its bugs may reach the review and the fix agent; `holdout`: traced and "
        "evaluated like the others, but its bugs are never shown to the fixer, so it tells whether a "
        "fix helps beyond the tasks it was made from.",
    )

    _id = field_validator("task_id")(_slug)
    _prompt = field_validator("prompt")(not_blank)
    _expected = field_validator("expected_result")(json_ints_in_range)

    @field_validator("tags")
    @classmethod
    def _tags(cls, tags: list[str]) -> list[str]:
        for tag in tags:
            if not _SLUG.match(tag):
                raise ValueError(f"tag '{tag}' {_SLUG_RULE}")
        return tags


class SelectionCase(StrictModel):
    """A query and the tool that should answer it, for the tool-selection lint."""

    query: str = Field(description="What a user asks.")
    expected_tool: str = Field(min_length=1, description="The tool that should be picked for the query.")

    _query = field_validator("query")(not_blank)


class TaskFile(StrictModel):
    """The whole tasks.yaml."""

    tasks: list[Task] = Field(min_length=1, description="The tasks, in the order they run.")
    selection_cases: list[SelectionCase] = Field(
        default_factory=list, description="Queries with the tool each should select."
    )

    _source: YamlDocument | None = PrivateAttr(default=None)

    @property
    def source(self) -> YamlDocument | None:
        """The parsed file, for locating later problems (e.g. a reference call to a missing tool)."""
        return self._source

    def task_ids(self) -> list[str]:
        return [task.task_id for task in self.tasks]

    def holdout_ids(self) -> set[str]:
        """Ids of the tasks whose bugs the fix loop must not see (`split: holdout`)."""
        return {task.task_id for task in self.tasks if task.split == "holdout"}

    def content_hash(self) -> str:
        """`sha256:…` of the tasks' content: comments and formatting do not change it, edits do."""
        data = self.model_dump(mode="json")
        for task in data["tasks"]:
            if task.get("split") == "train":
                del task["split"]  # the default: files written before the field hash as they did
        return sha256_json(data)

    def problem(self, loc: Loc, message: str) -> Problem:
        """A problem at `loc` in this file, worded like the loader's own."""
        text = f"{describe_task_loc(self._source.data if self._source else {}, loc)}: {message}"
        if self._source is None:
            return Problem(DEFAULT_TASKS_FILE, None, text)
        return self._source.problem(loc, text)


def describe_task_loc(data: Any, loc: Loc) -> str:
    """`('tasks', 3, 'task_type')` -> `task 'find-first' field 'task_type'` (or `task #4` without an id)."""
    if len(loc) >= 2 and loc[0] in ("tasks", "selection_cases") and isinstance(loc[1], int):
        if loc[0] == "tasks":
            item = _item(data, "tasks", loc[1])
            task_id = item.get("task_id") if isinstance(item, dict) else None
            if isinstance(task_id, str) and len(task_id) > MAX_TASK_ID:
                task_id = task_id[:20] + "…"  # a message should not repeat a 10,000-character id
            who = f"task '{task_id}'" if isinstance(task_id, str) and task_id else f"task #{loc[1] + 1}"
        else:
            who = f"selection case #{loc[1] + 1}"
        rest = loc[2:]
        return f"{who} field '{field_path(rest)}'" if rest else who
    return f"field '{field_path(loc)}'" if loc else "the file"


def _item(data: Any, key: str, index: int) -> Any:
    items = data.get(key) if isinstance(data, dict) else None
    return items[index] if isinstance(items, list) and 0 <= index < len(items) else None


def load_tasks(path: str | Path = DEFAULT_TASKS_FILE, environ: Mapping[str, str] | None = None) -> TaskFile:
    """Read and validate tasks.yaml; raise ConfigFileError listing every problem with its line.

    `${NAME}` references are substituted as in config.yaml, from `environ` (the
    process environment by default) over the `.env` beside the file. The
    values become part of the tasks (prompts reach traces): they are not
    secrets here.
    """
    doc = load_yaml(path, what="task file")
    dotenv = read_dotenv(resolved(doc.path).parent / ".env")
    substituted = interpolate(doc.data, environment_with_dotenv(dotenv, environ))
    unset = [loc for loc, _ in substituted.problems]
    problems = [
        doc.problem(loc, f"{describe_task_loc(doc.data, loc)}: {message}")
        for loc, message in substituted.problems
    ]
    doc.data = substituted.data
    taskfile = validate_document(
        doc,
        TaskFile,
        problems=[*problems, *_duplicate_ids(doc)],
        describe=lambda loc: describe_task_loc(doc.data, loc),
        skip=unset,
    )
    taskfile._source = doc
    return taskfile


def _duplicate_ids(doc: YamlDocument) -> list[Problem]:
    first_line: dict[str, int | None] = {}
    problems = []
    tasks = doc.data.get("tasks")
    for index, item in enumerate(tasks if isinstance(tasks, list) else []):
        task_id = item.get("task_id") if isinstance(item, dict) else None
        if not isinstance(task_id, str):
            continue
        line = doc.line_for(("tasks", index, "task_id"))
        if task_id in first_line:
            problems.append(
                Problem(
                    doc.display,
                    line,
                    f"task '{task_id}' field 'task_id': duplicate id "
                    f"(first used at line {first_line[task_id]})",
                )
            )
        else:
            first_line[task_id] = line
    return problems


def task_file_hash(path: str | Path = DEFAULT_TASKS_FILE) -> str:
    """The content hash of a task file (see `TaskFile.content_hash`), for run manifests and doit."""
    return load_tasks(path).content_hash()


def select_tasks(taskfile: TaskFile, task_ids: Iterable[str] = (), tags: Iterable[str] = ()) -> list[Task]:
    """The tasks named by `--task` or carrying a `--tag` (either matches), in file order; all if neither.

    An unknown id or a tag no task has is an error: a typo must not quietly run nothing.
    """
    task_ids, tags = list(task_ids), list(tags)
    if not task_ids and not tags:
        return list(taskfile.tasks)
    known = taskfile.task_ids()
    unknown = [task_id for task_id in task_ids if task_id not in known]
    if unknown:
        raise UserError(f"unknown task id(s): {', '.join(unknown)} (known: {', '.join(known)})")
    known_tags = sorted({tag for task in taskfile.tasks for tag in task.tags})
    missing_tags = [tag for tag in tags if tag not in known_tags]
    if missing_tags:
        raise UserError(
            f"no task has tag(s): {', '.join(missing_tags)} (tags in use: {', '.join(known_tags) or 'none'})"
        )
    wanted_ids, wanted_tags = set(task_ids), set(tags)
    return [
        task for task in taskfile.tasks if task.task_id in wanted_ids or wanted_tags.intersection(task.tags)
    ]


TASKS_TEMPLATE = """\
# Tasks for MCPipeChekr: requests a real user would make of an agent that has this server's tools.
# Agents run them blind; check the file with `mcpipechekr validate`.
#
# Fields of a task:
#   task_id          unique slug (lowercase letters, digits, '-'), used in reports and file names
#   prompt           the exact text the agent receives
#   task_type        deterministic (one right answer) or open_ended (judged against a reference answer)
#   expected_tool    optional: the tool a good agent calls for this task
#   expected_result  optional: the right answer as JSON; the baseline phase fills it in
#   min_calls        optional: fewest tool calls that can solve the task (1 or more)
#   reference_calls  optional: tool calls that reproduce the answer without a model, each
#                    {tool: NAME, arguments: {...}}; `validate` checks that the tools exist
#   tags             optional: slugs for choosing tasks with --tag
#   split            optional: train (the default) or holdout: holdout tasks are traced and evaluated,
#                    but their bugs never reach the fix agent, so they tell whether fixes generalize
#
# `mcpipechekr tasks propose` replaces this example with tasks drafted from the server's own data,
# each verified; once you have edited this file, `mcpipechekr tasks propose --append` adds to it.
tasks:
  - task_id: example-task
    prompt: >-
      Replace this with a request your users make, for example: find the most recent
      message about the quarterly report and summarise what was decided.
    task_type: open_ended
    # expected_tool: search
    # min_calls: 1
    # reference_calls:
    #   - tool: search
    #     arguments: {query: quarterly report}
    tags: [example]

# Optional: queries paired with the tool that should answer them, for the tool-selection lint.
# selection_cases:
#   - query: find messages from Alice about the budget
#     expected_tool: search
"""
"""The tasks.yaml `mcpipechekr init` writes: one example task, every field explained.

`tasks propose` replaces a task file that is still exactly this text (`is_untouched_example`): a
user who has not edited it loses nothing, and one who has is never overwritten.
"""


def is_untouched_example(path: Path) -> bool:
    """Whether `path` holds, byte for byte, the example `init` wrote: nothing of the user's to lose."""
    template = TASKS_TEMPLATE.encode("utf-8")
    try:  # bounded, and never blocked by a FIFO: anything odd is not the example, and load_tasks says why
        return read_user_text(path, limit=len(template)).encode("utf-8") == template
    except UserError:
        return False


def refuse_untouched_example(path: Path) -> None:
    """Refuse to baseline or trace the example `init` wrote: its one task is a placeholder, and every figure
    made from it would be noise. The message says what to type instead."""
    if is_untouched_example(path):
        raise InputError(
            f"{display_path(path)} still holds only the example task `mcpipechekr init` wrote: draft tasks "
            "from the server's own data with `mcpipechekr tasks propose`, or replace the example with your "
            "users' requests (docs/tasks.md)"
        )
