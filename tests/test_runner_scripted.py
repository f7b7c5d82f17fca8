"""The demo runner on servers nobody wrote a demo agent for, and how it finds one that was written.

Without `demo_agent.py` in the server's folder the package's generic scripted
agent runs. It is tried on two servers of a user's own (the bookshop, and the
pantry with enums, an integer id and an optional number), through Phase 1 as
`mcpipechekr run` does it: the registry's demo runner, the capture proxy,
journals and trace assembly. Expected values come from the servers' own data
(the bookshop's SQLite file, the results in the journal), never from the agent.
"""

from __future__ import annotations

import ast
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcpipechekr.artifacts import create_run_dir, read_trace
from mcpipechekr.artifacts.trace import ModelTurn, ToolCall, Trace
from mcpipechekr.capture import journal_tool_calls
from mcpipechekr.config import ServerConfig, load_config
from mcpipechekr.errors import UserError
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.runners.base import DEMO_MODEL_LABEL
from mcpipechekr.runners.demo import DEMO_AGENT_FILE, demo_agent_path, load_demo_agent, load_demo_module
from mcpipechekr.runners.execute import run_phase1
from mcpipechekr.tasks import load_tasks

SERVERS = Path(__file__).parent / "servers"
EXAMPLE_AGENT = Path(__file__).resolve().parents[1] / "examples" / "emailindex" / "demo_agent.py"


def phase1(root: Path, server: str, prompts: dict[str, str], **server_fields: Any) -> dict[str, Trace]:
    """Phase 1 with the demo provider on these prompts; the trace of each, by task id."""
    config = {
        "server": {
            "name": Path(server).stem,
            "command": sys.executable,
            "args": [str(SERVERS / server)],
            "cwd": str(root),
            "env": {"BOOKSHOP_DB": str(root / "shop.db")},
            **server_fields,
        },
        "paths": {"tasks": "tasks.yaml", "runs": "runs", "home": "home"},
    }
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    tasks = [
        {"task_id": task_id, "prompt": prompt, "task_type": "open_ended"}
        for task_id, prompt in prompts.items()
    ]
    (root / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}))
    loaded = load_config(root / "config.yaml")
    run = create_run_dir(loaded.paths.runs)
    demo = ProviderSpec(provider="demo")
    paths = run_phase1(
        loaded, run, load_tasks(loaded.paths.tasks).tasks, [demo], concurrency=4, progress=False
    )
    traces = {trace.task_id: trace for trace in map(read_trace, paths)}
    for trace in traces.values():
        journal = run.root / "journals" / f"{trace.task_id}__demo__r001.jsonl"
        assert [(c.tool, c.arguments) for c in journal_tool_calls(journal)] == calls(trace), trace.task_id
    return traces


def calls(trace: Trace) -> list[tuple[str, dict[str, Any]]]:
    return [(step.tool, step.arguments) for step in trace.steps if isinstance(step, ToolCall)]


def results(trace: Trace) -> list[Any]:
    return [
        json.loads(s.result_content[0]["text"])
        for s in trace.steps
        if isinstance(s, ToolCall) and not s.is_error
    ]


def assert_scripted_demo(trace: Trace) -> None:
    """A completed demo trace: labelled, every turn with one thinking line and estimated usage."""
    assert trace.status == "completed" and trace.runner == "demo" and trace.model == DEMO_MODEL_LABEL
    turns = [step for step in trace.steps if isinstance(step, ModelTurn)]
    assert turns and all(len(turn.thinking) == 1 for turn in turns)
    assert trace.totals.usage_source == "estimated" and all(turn.usage.input_tokens > 0 for turn in turns)


BOOKSHOP = {
    "orders": "How many orders has the customer alice placed?",
    "author": "Which books did Mara Ellison write?",
    "stock": 'How many copies of "Night Trains" are in stock?',
}


def test_on_the_bookshop_it_picks_tools_by_their_words_and_opens_a_hit_by_isbn(tmp_path: Path) -> None:
    traces = phase1(tmp_path, "bookshop_server.py", BOOKSHOP)
    for trace in traces.values():
        assert_scripted_demo(trace)
    with sqlite3.connect(tmp_path / "shop.db") as db:
        (orders,) = db.execute("SELECT count(*) FROM orders WHERE customer = 'alice'").fetchone()
        titles = [t for (t,) in db.execute("SELECT title FROM books WHERE author = 'Mara Ellison'")]
        isbn, stock = db.execute("SELECT isbn, stock FROM books WHERE title = 'Night Trains'").fetchone()

    assert calls(traces["orders"]) == [("order_count", {"customer": "alice"})]
    assert f"orders: {orders}" in (traces["orders"].final_answer or "")

    assert calls(traces["author"]) == [("search_books", {"text": "Mara Ellison"})]
    assert len(titles) == 2 and all(title in (traces["author"].final_answer or "") for title in titles)

    # get_book needs an ISBN the prompt lacks: a search first, then the hit's ISBN.
    assert calls(traces["stock"]) == [
        ("search_books", {"text": "Night Trains"}),
        ("get_book", {"isbn": isbn}),
    ]
    assert f"stock: {stock}" in (traces["stock"].final_answer or "")


PANTRY = {
    "convert": "Convert 250 grams to ounces.",
    "quick-vegan": "Which vegan recipes are ready in 20 minutes or less?",
    "soup-time": "How long does the Red Lentil Soup take to cook?",
    "steps": "What are the steps of recipe 13?",
    "mixed-units": "Convert 2 cups to grams.",
}


def test_on_the_pantry_it_fills_enums_numbers_and_ids_and_reports_a_tool_error(tmp_path: Path) -> None:
    traces = phase1(tmp_path, "pantry_server.py", PANTRY)
    for trace in traces.values():
        assert_scripted_demo(trace)

    convert = traces["convert"]
    assert calls(convert) == [("convert_units", {"amount": 250, "from_unit": "grams", "to_unit": "ounces"})]
    (converted,) = results(convert)
    assert f"amount: {converted['amount']}, unit: ounces" in (convert.final_answer or "")

    quick = traces["quick-vegan"]
    assert calls(quick) == [("find_recipes", {"diet": "vegan", "max_minutes": 20})]
    (listed,) = results(quick)
    assert listed["recipes"] and all(r["name"] in (quick.final_answer or "") for r in listed["recipes"])

    soup = traces["soup-time"]
    (search, card) = calls(soup)
    assert search == ("find_recipes", {"query": "Red Lentil Soup"})
    hit = next(r for r in results(soup)[0]["recipes"] if r["name"] == "Red Lentil Soup")
    assert card == ("recipe_card", {"recipe_id": hit["recipe_id"]})
    assert f"minutes: {results(soup)[1]['minutes']}" in (soup.final_answer or "")

    assert calls(traces["steps"]) == [("recipe_card", {"recipe_id": 13})]
    assert all(step in (traces["steps"].final_answer or "") for step in results(traces["steps"])[0]["steps"])

    mixed = traces["mixed-units"]
    (failed,) = [step for step in mixed.steps if isinstance(step, ToolCall)]
    assert failed.is_error and "one is a weight and the other a volume" in (failed.error_text or "")
    assert "Errors from the tools" in (mixed.final_answer or "")
    assert "one is a weight and the other a volume" in (mixed.final_answer or "")


# --- Which agent runs -----------------------------------------------------------------------------

OWN_AGENT = """
from pydantic_ai.messages import ModelResponse, TextPart, ThinkingPart

from mcpipechekr.runners.messages import user_prompt


def demo_model(messages, info):
    answer = f"{len(info.function_tools)} tools for: {user_prompt(messages)}"
    return ModelResponse(parts=[ThinkingPart("mine"), TextPart(answer)])
"""


def test_a_demo_agent_in_the_servers_folder_runs_instead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # as for a user without PYTHONDONTWRITEBYTECODE
    (tmp_path / DEMO_AGENT_FILE).write_text(OWN_AGENT)
    traces = phase1(tmp_path, "pantry_server.py", {"steps": PANTRY["steps"]})
    assert traces["steps"].final_answer == f"3 tools for: {PANTRY['steps']}" and not calls(traces["steps"])
    assert traces["steps"].model == DEMO_MODEL_LABEL
    assert not (tmp_path / "__pycache__").exists(), "loading it left bytecode in the server's folder"


def test_the_folder_is_server_repo_when_set_else_the_stdio_cwd(tmp_path: Path) -> None:
    repo, cwd = tmp_path / "repo", tmp_path / "cwd"
    for folder in (repo, cwd):
        folder.mkdir()
        (folder / DEMO_AGENT_FILE).write_text(OWN_AGENT)
    assert demo_agent_path(ServerConfig(command="x", cwd=str(cwd), repo=str(repo))) == repo / DEMO_AGENT_FILE
    assert demo_agent_path(ServerConfig(command="x", cwd=str(cwd))) == cwd / DEMO_AGENT_FILE
    assert demo_agent_path(ServerConfig(command="x", cwd=str(cwd), repo=str(tmp_path))) is None
    assert (
        demo_agent_path(ServerConfig(url="http://127.0.0.1:1/mcp", repo=str(repo))) == repo / DEMO_AGENT_FILE
    )
    assert demo_agent_path(ServerConfig(url="http://127.0.0.1:1/mcp")) is None


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("x = 1\ndef demo_model(:\n", ":2: the demo agent failed to load: SyntaxError"),
        (
            "import json\n\nraise RuntimeError('no archive')\n",
            ":3: the demo agent failed to load: RuntimeError: no archive",
        ),
        ("def model(messages, info):\n    pass\n", ": a demo agent must define `demo_model(messages, info)`"),
    ],
)
def test_an_unusable_demo_agent_is_a_user_error_naming_file_and_line(
    tmp_path: Path, source: str, message: str
) -> None:
    path = tmp_path / DEMO_AGENT_FILE
    path.write_text(source)
    with pytest.raises(UserError) as error:
        load_demo_agent(path)
    assert error.value.message.startswith(f"{path}{message}")


def test_a_broken_demo_agent_stops_phase1_with_that_message(tmp_path: Path) -> None:
    (tmp_path / DEMO_AGENT_FILE).write_text("import no_such_module_anywhere\n")
    with pytest.raises(
        UserError, match=r"demo_agent\.py:1: the demo agent failed to load: ModuleNotFoundError"
    ):
        phase1(tmp_path, "pantry_server.py", {"steps": PANTRY["steps"]})


def test_the_examples_agent_uses_only_pydantic_ai_and_public_names_of_the_package() -> None:
    """So the example does not tie itself to the package's internals."""
    tree = ast.parse(EXAMPLE_AGENT.read_text())
    imported = [
        (node.module or "", alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    ]
    ours = [(module, name) for module, name in imported if module.split(".")[0] == "mcpipechekr"]
    assert ours and not [(module, name) for module, name in ours if name.startswith("_") or "._" in module]
    assert {module.split(".")[0] for module, _ in imported} <= {
        "__future__",
        "collections",
        "dataclasses",
        "datetime",
        "typing",
        "pydantic_ai",
        "mcpipechekr",
    }
    assert callable(load_demo_module(EXAMPLE_AGENT).demo_model)
