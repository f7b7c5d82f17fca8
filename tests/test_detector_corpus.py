"""The detector-accuracy corpus (bench/corpus/roomdesk) stays usable by bench/detector_accuracy.py.

Not the accuracy targets (those are the benchmark's): that the server starts and
lists its tools with its planted behaviour, that tasks.yaml validates and every
task has a script and a labels entry, that every labelled or scripted tool
exists, that each recorded session imports as its task's trace with the
scripted calls in order, and that the scoring counts hits, misses, `may`
labels and false positives as documented.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import StdioServerParameters

from mcpipechekr.artifacts.trace import ToolCall, read_trace
from mcpipechekr.config import load_config
from mcpipechekr.session_import import import_session
from mcpipechekr.tasks import load_tasks

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH / "corpus"))
import detector_accuracy as bench  # noqa: E402
import script  # noqa: E402

# Its module fixtures are costly: under pytest-xdist one worker runs the whole module, building them once.
pytestmark = pytest.mark.xdist_group("test_detector_corpus")

BUG_TYPES = {"bug", "feature_gap", "efficiency", "correctness", "description"}


async def _list_and_call(calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], list[Any]]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=[str(script.SERVER)])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = [tool.name for tool in (await session.list_tools()).tools]
        results = [await session.call_tool(name, arguments) for name, arguments in calls]
    return tools, results


@pytest.fixture(scope="module")
def server_tools() -> list[str]:
    import anyio

    tools, _ = anyio.run(_list_and_call, [])
    return tools


def test_the_server_lists_its_tools_and_shows_its_planted_problems():
    import anyio

    tools, (quoted, plain, rules, window, *inventory) = anyio.run(
        _list_and_call,
        [
            ("find_people", {"name": "Sean O'Neill"}),
            ("find_people", {"name": "Neill"}),
            ("room_bookings", {"room_id": 1}),
            ("list_bookings", {"date_from": "2025-01-01", "date_to": "2025-12-31"}),
            *[("list_equipment", {"page": page}) for page in (1, 2, 3, 4)],
        ],
    )
    assert {"list_rooms", "room_details", "list_bookings", "room_history", "get_attendees",
            "find_people", "room_bookings", "count_bookings", "get_booking",
            "list_equipment"} <= set(tools)  # fmt: skip
    assert quoted.is_error and "syntax error" in quoted.content[0].text
    assert not plain.is_error and "Facilities" in plain.content[0].text
    assert "bookings" not in json.loads(rules.content[0].text)  # booking rules, not bookings
    assert window.is_error and "31 days" in window.content[0].text
    pages = [json.loads(result.content[0].text) for result in inventory]
    assert pages[0]["pages"] == 4
    bought = [row["bought"] for page in pages for row in page["equipment"]]
    newest = max(bought)  # the newest item is on page 1, the inventory is not in that order
    assert bought.count(newest) == 1 and newest in {row["bought"] for row in pages[0]["equipment"]}
    assert bought != sorted(bought) and bought != sorted(bought, reverse=True)


def test_tasks_scripts_and_labels_cover_the_same_tasks_with_real_tools(server_tools: list[str]):
    tasks = load_tasks(script.TASKS).tasks
    ids = [task.task_id for task in tasks]
    assert len(ids) >= 8
    sessions = script.load_sessions()
    labels = bench.load_labels()
    assert set(sessions) == set(ids) == set(labels)
    for task in tasks:
        assert task.expected_result is not None, task.task_id
        assert task.expected_tool in server_tools
        assert all(call.tool in server_tools for call in task.reference_calls)
        assert all(name in server_tools for name, _ in sessions[task.task_id].calls)
    shapes = {type(task.expected_result).__name__ for task in tasks}
    assert {"int", "str", "list", "dict"} <= shapes
    for task_labels in labels.values():
        for label in task_labels:
            assert set(label.kinds) <= BUG_TYPES
            assert label.tool is None or label.tool in server_tools
    assert sum(label.must for task_labels in labels.values() for label in task_labels) >= 6
    assert [task_id for task_id, task_labels in labels.items() if not task_labels]  # clean controls


@pytest.mark.slow
@pytest.mark.parametrize("client", ["opencode", "claude-code"])
def test_every_recorded_session_imports_as_its_scripted_calls(tmp_path: Path, client: str):
    config = load_config(script.write_project(tmp_path))
    run = None
    for session in script.load_sessions().values():
        path = script.RECORDED / client / bench.RECORDED_FILE[client].format(task=session.task_id)
        imported = import_session(config, client, path, session.task_id, new_run=run is None)
        run = imported.run_dir
        trace = read_trace(imported.path)
        assert trace.status == "completed", (session.task_id, trace.status_reason)
        calls = [(step.tool, step.arguments) for step in trace.steps if isinstance(step, ToolCall)]
        assert calls == session.calls, session.task_id
        assert trace.final_answer is not None and " ".join(trace.final_answer.split()) == session.final


def _bug(task: str, kind: str, tool: str | None) -> dict[str, Any]:
    return {"id": f"X-{task}", "type": kind, "tool": tool, "severity": "low", "task_ids": [task]}


def test_scoring_counts_hits_misses_may_labels_and_false_positives():
    labels = {
        "a": [
            bench.Label("a", ("feature_gap",), "t1", True, ""),
            bench.Label("a", ("efficiency",), "t1", False, ""),
        ],
        "b": [bench.Label("b", ("correctness",), None, True, "")],
        "c": [],
    }
    bugs = [
        _bug("a", "feature_gap", "t1"),  # hit
        _bug("a", "efficiency", "t1"),  # may: neither way
        _bug("a", "feature_gap", "t2"),  # wrong tool: false
        _bug("c", "efficiency", "t1"),  # a clean task: false
    ]
    result = bench.score("x", bugs, labels)
    assert (result.true_bugs, result.false_bugs, result.hits, result.musts) == (1, 2, 1, 2)
    assert result.precision == pytest.approx(1 / 3) and result.recall == pytest.approx(0.5)
    assert [line.split(":")[0] for line in result.misses] == ["b"]
    # A bug citing an attempt that errored is a false positive, whatever its other evidence scores.
    cited = {**_bug("a", "feature_gap", "t1"), "evidence": [{"task_id": "a", "trace": "traces/a__r002.json"}]}
    result = bench.score("x", [cited], labels, frozenset({"traces/a__r002.json"}))
    assert (result.true_bugs, result.false_bugs) == (1, 1)
    assert result.false_positives == ["errored attempt traces/a__r002.json: X-a"]
