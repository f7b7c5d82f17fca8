"""Writing proposed tasks: a new tasks.yaml, or appended to an existing one with its comments kept.

A task file is never overwritten, with one exception: the example `mcpipechekr
init` writes, while it is still byte for byte what init wrote
(`tasks.is_untouched_example`), is replaced, so that `tasks propose` right after
`init` just works. It is checked again just before the write, so a file edited
while the tasks were being proposed is kept.

Appending inserts the new tasks at the end of the `tasks:` list, in the
indentation the file already uses, before any key that follows it
(`selection_cases:`), so a hand-written file keeps its comments and order. The
result is loaded back (`tasks.load_tasks`) before it replaces the file: a file
that would not validate is never written.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

import yaml

from mcpipechekr.artifacts.atomic import atomic_write_text
from mcpipechekr.errors import UserError
from mcpipechekr.tasks import Task, is_untouched_example, load_tasks

HEADER = """\
# Tasks proposed by `mcpipechekr tasks propose` from read-only calls to the server. Each one was
# verified: its reference_calls were replayed against a freshly started server and returned its
# expected_result. Read them, reword the prompts the way your users ask, delete the ones that do not
# matter, and check the file with `mcpipechekr validate`. `split: holdout` tasks are traced and
# evaluated like the others, but their bugs are never shown to the fix agent (docs/tasks.md).

tasks:
"""
FIELD_ORDER = (
    "task_id",
    "prompt",
    "task_type",
    "expected_tool",
    "expected_result",
    "min_calls",
    "reference_calls",
    "allow_writes",
    "split",
    "tags",
)


def task_data(task: Task) -> dict[str, Any]:
    """The task as it is written: its fields in the documented order, defaults left out (split kept)."""
    data = task.model_dump(mode="json")
    out = {key: data[key] for key in FIELD_ORDER if key in data}
    if not out.get("allow_writes"):
        out.pop("allow_writes", None)
    for key in ("expected_tool", "expected_result", "min_calls"):
        if out.get(key) is None:
            out.pop(key, None)
    return out


def render_tasks(tasks: list[Task], indent: str = "  ") -> str:
    """The tasks as YAML list items, each item's lines indented by `indent`, a blank line between."""
    blocks = []
    for task in tasks:
        text = yaml.safe_dump([task_data(task)], sort_keys=False, allow_unicode=True, width=100)
        blocks.append("".join(f"{indent}{line}\n" if line else "\n" for line in text.splitlines()))
    return "\n".join(blocks)


def new_task_file(tasks: list[Task]) -> str:
    return HEADER + render_tasks(tasks)


def appended(existing: str, tasks: list[Task], path: Path) -> str:
    """`existing` with the tasks added at the end of its `tasks:` list."""
    lines = existing.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if re.match(r"^tasks:\s*(#.*)?$", line)), None)
    if start is None:
        raise UserError(f"{path}: no block list `tasks:` to append to; use --output to write a new file")
    end = next((i for i in range(start + 1, len(lines)) if re.match(r"^[A-Za-z_]", lines[i])), len(lines))
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
        end -= 1  # blank lines, and comments at column 0, which introduce the next key
    item = next(
        (re.match(r"^(\s*)- ", line) for line in lines[start + 1 : end] if re.match(r"^\s*- ", line)), None
    )
    indent = item.group(1) if item else "  "
    block = render_tasks(tasks, indent)
    before = "".join(lines[:end])
    if before and not before.endswith("\n"):
        before += "\n"
    return before + "\n" + block + ("\n" if end < len(lines) else "") + "".join(lines[end:])


def write_task_file(path: Path, text: str) -> None:
    """Write `text` to `path` once it loads as a valid task file."""
    with tempfile.TemporaryDirectory() as folder:
        probe = Path(folder) / path.name
        probe.write_text(text, encoding="utf-8")
        load_tasks(probe)  # raises ConfigFileError with every problem
    atomic_write_text(path, text)


def proposal_target(tasks_path: Path, output: Path | None, append: bool) -> Path:
    """Where proposed tasks go; a UserError, before anything runs, when that would overwrite a file.

    `--append` adds to the task file; `--output PATH` writes a new file; with
    neither, the task file is written when it does not exist yet or still holds
    only init's untouched example (`replaces_example`).
    """
    if append and output is not None:
        raise UserError(
            "--append and --output are mutually exclusive: append to the task file, or write a new one"
        )
    if append:
        if not tasks_path.exists():
            raise UserError(f"{tasks_path}: no such task file to append to; leave out --append to create it")
        return tasks_path
    target = output or tasks_path
    if target.exists() and not replaces_example(target, output, append):
        hint = (
            "choose another --output PATH"
            if output is not None
            else "--append to add to it, or --output PATH"
        )
        raise UserError(f"{target} exists and is not overwritten: {hint}")
    return target


def replaces_example(target: Path, output: Path | None, append: bool) -> bool:
    """Whether writing to `target` replaces the example tasks.yaml `init` wrote, untouched: only the
    task file itself, without --append or --output, and only while it is exactly that example."""
    return not append and output is None and is_untouched_example(target)


def existing_tasks(path: Path, append: bool) -> list[Task]:
    """The tasks new ones must not repeat (their ids, their prompts): the task file's, when appending."""
    return list(load_tasks(path).tasks) if append else []


def write_proposed(path: Path, tasks: list[Task], append: bool) -> Path:
    """Write the tasks to `path`: a new file (or one replacing init's untouched example), or added to the
    end of its `tasks:` list."""
    if not append and path.exists() and not is_untouched_example(path):
        raise UserError(
            f"{path} changed while the tasks were proposed and is not overwritten; nothing was written: "
            "run `mcpipechekr tasks propose --append` to add to it, or --output PATH"
        )
    text = appended(path.read_text(encoding="utf-8"), tasks, path) if append else new_task_file(tasks)
    write_task_file(path, text)
    return path
