"""The offline (lexical) selection test: its accuracy on published servers, its known traps, and its queries.

The corpus is tests/fixtures/lint/selection/: the tools/list of four published
servers, kept verbatim, and two servers of tests/servers listed over stdio, with
labelled queries written as a user would type them. bench/lint_selection_accuracy.py
prints the figures; this file holds the floor under them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from mcpipechekr.artifacts import TefReport
from mcpipechekr.artifacts.tools_snapshot import tool_definition
from mcpipechekr.cli import main
from mcpipechekr.lint.lexical import query_intent, tool_intent
from mcpipechekr.lint.selection import LexicalSelector, SelectionQuery, selection_queries
from mcpipechekr.tasks import load_tasks

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
import lint_selection_accuracy as bench  # noqa: E402
from lint_selection_previous import PreviousLexicalSelector  # noqa: E402

CORPUS = REPO / "tests" / "fixtures" / "lint" / "selection"
FIXTURE = REPO / "tests" / "servers" / "lint_fixture_server.py"

ACHIEVED = 44 / 58
"""Top-1 accuracy of the current lexical selector on the corpus when it was written (the previous: 25/58)."""
MARGIN = 0.03


def published(name: str):
    return [tool_definition(t) for t in json.loads((CORPUS / f"{name}.json").read_text())["tools"]]


def pick(tools, text: str, selector=None) -> str | None:
    query = SelectionQuery(text, tools[0].name, "t")
    return (selector or LexicalSelector()).select([query], tools, 1)[0][0].tool


@pytest.fixture(scope="module")
def corpus() -> list[bench.ServerCase]:
    return bench.load_corpus()


def test_accuracy_on_published_servers_holds_its_floor(corpus) -> None:
    assert sum(len(c.queries) for c in corpus) == 58 and len(corpus) == 6
    assert {c.name for c in corpus} >= {"mcp-server-git", "server-filesystem", "server-memory", "pantry"}
    current = bench.overall(bench.right(LexicalSelector(), corpus))
    previous = bench.overall(bench.right(PreviousLexicalSelector(), corpus))
    assert current >= ACHIEVED - MARGIN, f"lexical selection accuracy fell to {current:.3f}"
    assert previous < current - 0.2  # the comparison the benchmark prints is measured, not assumed


def test_a_read_request_goes_to_the_read_tool_not_the_write_verb_that_shares_its_noun() -> None:
    git = published("mcp-server-git")
    for text in ("what was the most recent commit?", "show me the last five commits"):
        assert pick(git, text) == "git_log"
        assert pick(git, text, PreviousLexicalSelector()) != "git_log"  # the trap this guards against
    # The same noun as an order picks the write tool.
    assert pick(git, "commit my work with the message 'fix typo'") == "git_commit"
    assert query_intent("what was the most recent commit?") == "read"
    assert query_intent("Please commit my work") == "write"
    assert query_intent("The tests pass; now push the branch") == "write"
    assert query_intent("which changes are staged for commit?") == "read"
    # Without annotations, a write verb in the name makes a tool a writer.
    git_commit = next(t for t in git if t.name == "git_commit").model_copy(update={"annotations": None})
    git_log = next(t for t in git if t.name == "git_log").model_copy(update={"annotations": None})
    assert (tool_intent(git_commit), tool_intent(git_log)) == ("write", "read")


def test_describing_one_tool_s_parameters_does_not_let_it_steal_other_queries(corpus) -> None:
    """Following lint's advice (TEF-P001: describe the parameters) on one tool must not cost the others."""
    case = next(c for c in corpus if c.name == "mcp-server-git")
    described = []
    for tool in case.tools:
        if tool.name == "git_status":
            schema = json.loads(json.dumps(tool.input_schema))
            schema["properties"]["repo_path"]["description"] = (
                "Path to the Git repository whose status to show: the folder holding .git, absolute or "
                "relative to the server's directory, e.g. /home/me/project. Every branch, commit, staged "
                "and unstaged change, untracked file and recent log entry of this repository is covered, "
                "including files added to the index, files changed in the working tree and the commit "
                "history of the current branch since its last push."
            )
            tool = tool.model_copy(update={"input_schema": schema})
        described.append(tool)
    others = [q for q in case.queries if q.expected_tool != "git_status"]

    def stolen(selector) -> int:
        before = [c[0].tool for c in selector.select(others, case.tools, 1)]
        after = [c[0].tool for c in selector.select(others, described, 1)]
        return sum(1 for b, a in zip(before, after, strict=True) if a == "git_status" and b != "git_status")

    assert stolen(LexicalSelector()) == 0
    assert stolen(PreviousLexicalSelector()) >= 3  # the old single bag of words let it take them


def test_queries_come_from_tasks_expected_tool_else_first_reference_call(tmp_path: Path) -> None:
    (tmp_path / "tasks.yaml").write_text(
        yaml.safe_dump(
            {
                "tasks": [
                    {
                        "task_id": "declared",
                        "prompt": "Where is my order 1042?",
                        "task_type": "deterministic",
                        "expected_tool": "get_order",
                        "reference_calls": [{"tool": "other", "arguments": {}}],
                    },
                    {
                        "task_id": "by-reference",
                        "prompt": "What did order 7 cost?",
                        "task_type": "deterministic",
                        "reference_calls": [{"tool": "get_order", "arguments": {"order_id": 7}}],
                    },
                    {"task_id": "free", "prompt": "Say hello.", "task_type": "open_ended"},
                ],
                "selection_cases": [{"query": "Look up order 3", "expected_tool": "get_order"}],
            },
            sort_keys=False,
        )
    )
    queries = selection_queries(load_tasks(tmp_path / "tasks.yaml"))
    assert [(q.source, q.expected_tool) for q in queries] == [
        ("task:declared", "get_order"),
        ("task:by-reference", "get_order"),
        ("case:1", "get_order"),
    ]


def _config(folder: Path, tasks: dict) -> Path:
    config = {
        "server": {"name": "fixture", "command": sys.executable, "args": [str(FIXTURE), "--near-duplicates"]},
        "paths": {"home": str(folder / "home"), "tasks": str(folder / "tasks.yaml")},
    }
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    (folder / "tasks.yaml").write_text(yaml.safe_dump(tasks, sort_keys=False))
    return folder / "config.yaml"


def test_offline_selection_figures_are_notes_that_say_how_to_get_a_model_s(tmp_path: Path) -> None:
    tasks = {
        "tasks": [
            {
                "task_id": "customers",
                "prompt": "Which customers are called Ada?",
                "task_type": "deterministic",
                "reference_calls": [{"tool": "search_customers", "arguments": {"name": "Ada"}}],
            }
        ],
        "selection_cases": [
            {"query": "Search the customers in Leeds", "expected_tool": "search_customers"},
            {"query": "Find customers named Smith", "expected_tool": "find_customers"},
            {"query": "Where is order 1042?", "expected_tool": "get_order"},
        ],
    }
    config = _config(tmp_path, tasks)
    result = CliRunner().invoke(main, ["lint", "--config", str(config)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    text = result.output
    assert (
        "selection test with lexical-bm25 (lexical word overlap, not a model: its figures are notes)" in text
    )
    assert "4 queries x 1" in text
    assert "Selection warnings" not in text and "warning(s)" in text
    notes = text.split("\nNotes:\n")[1]
    assert "lexical selection precision" in notes and "no reason to change the description" in notes
    assert "`providers: {phase05: PROVIDER/MODEL}` in config.yaml" in text
    assert "`--phase05-provider PROVIDER/MODEL`" in text
    assert text.rstrip().endswith("selection note(s)")
    json_run = CliRunner().invoke(main, ["lint", "--config", str(config), "--format", "json"])
    report = TefReport.model_validate_json(json_run.stdout)
    assert report.selection_cases == 4 and report.selector == "lexical-bm25"
    assert "note: tool '" in json_run.stderr and "warning:" not in json_run.stderr


def test_a_reference_call_to_a_tool_the_server_lacks_is_reported_at_its_line(tmp_path: Path) -> None:
    tasks = {
        "tasks": [
            {
                "task_id": "t",
                "prompt": "Where is order 3?",
                "task_type": "deterministic",
                "reference_calls": [{"tool": "nope", "arguments": {}}],
            }
        ]
    }
    config = _config(tmp_path, tasks)
    result = CliRunner().invoke(main, ["lint", "--config", str(config)], catch_exceptions=False)
    assert result.exit_code == 2
    assert "tasks.yaml:" in result.output
    assert "task 't' field 'reference_calls[0].tool': the server lists no tool 'nope'" in result.output
