"""Correctness for every expected_result shape, unchecked tasks, and open-ended answers judged by a model.

The traces are built from what tests/servers/meetings_server.py returns (its
meetings and attendees), not from the bundled example, and evaluated through
`evaluate_contexts`, the code `mcpipechekr evaluate` runs.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from fakes.openai_server import FakeOpenAI, text_reply
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from trace_builder import call, ctx_of, make_trace

from mcpipechekr.artifacts import read_model, write_model
from mcpipechekr.artifacts.baseline import Baseline, BaselineEntry
from mcpipechekr.artifacts.bug_report import BugReport
from mcpipechekr.baseline import require_baseline
from mcpipechekr.cli import main
from mcpipechekr.config import ServerConfig, load_config
from mcpipechekr.evaluate import evaluate_run
from mcpipechekr.evaluate.answer_judge import AnswerJudge
from mcpipechekr.evaluate.correctness import identifying_payload
from mcpipechekr.evaluate.orchestrate import evaluate_contexts
from mcpipechekr.server.lifecycle import ServerUnderTest
from mcpipechekr.tasks import Task

pytestmark = pytest.mark.xdist_group("test_correctness")

SERVER = Path(__file__).parent / "servers" / "meetings_server.py"
T0 = "2026-12-01T09:00:00Z"
BUDGET_REVIEW = {
    "id": "m-41",
    "title": "Budget review",
    "day": "2026-03-02",
    "room": "Lindgren room",
    "attendees": ["Ingrid Falk", "Tobias Brandt", "Mei Chen"],
}
FOLLOW_UP = {
    "id": "m-42",
    "title": "Budget follow-up",
    "day": "2026-03-09",
    "room": "Harbour room",
    "attendees": ["Ingrid Falk", "Oskar Lund", "Priya Nair"],
}
FOUND = {"meetings": [BUDGET_REVIEW, FOLLOW_UP]}


def task(task_id: str, expected: object = None, *, task_type: str = "deterministic") -> Task:
    return Task(
        task_id=task_id,
        prompt=f"Question {task_id} about the meetings.",
        task_type=task_type,
        expected_tool="find_meetings",
        expected_result=expected,
    )


def entry(task_id: str, result: object) -> BaselineEntry:
    return BaselineEntry(
        task_id=task_id,
        result=result,
        plausibility_score=1.0,
        evaluator="rules",
        timestamp=T0,
        method="reference_calls",
        calls=1,
        reference_tokens=50,
    )


def judge_answers(the_task: Task, answers: list[str], *, judge: AnswerJudge | None = None) -> BugReport:
    """Evaluate one trace per answer, each after a find_meetings call that returned both budget meetings."""
    result = (
        identifying_payload(the_task.expected_result, expected=True)
        if the_task.task_type == "deterministic"
        else {"results": [{"tool": "find_meetings", "arguments": {}, "content": FOUND}]}
    )
    contexts = [
        ctx_of(
            make_trace(
                the_task.task_id,
                [call("find_meetings", {"topic": "budget"}, FOUND)],
                answer=answer,
                repetition=number,
            ),
            the_task,
            entry(the_task.task_id, result),
        )
        for number, answer in enumerate(answers, start=1)
    ]
    report, _ = evaluate_contexts(
        contexts, run_id="run-20261201-001", phase1_provider="demo", threshold=0.2, analyzers=[], judge=judge
    )
    return report


def successes(report: BugReport) -> int:
    [stats] = report.tasks
    return stats.successes


def wrong_answer(report: BugReport, task_id: str):
    return next((bug for bug in report.bugs if bug.id == f"COR-wrong-answer-{task_id}"), None)


def test_a_list_is_checked_both_ways_and_in_any_order() -> None:
    attendees = task("attendees", ["Ingrid Falk", "Tobias Brandt", "Mei Chen"])
    right = judge_answers(attendees, ["Mei Chen, Ingrid Falk and Tobias Brandt attended the budget review."])
    assert successes(right) == 1 and not right.bugs and right.tasks[0].correctness == "checked"

    for wrong in [
        "Ingrid Falk, Oskar Lund and Priya Nair attended.",  # the follow-up's attendees
        "Ingrid Falk, Tobias Brandt, Mei Chen and Oskar Lund attended.",  # one too many
        "Ingrid Falk and Mei Chen attended.",  # one missing
    ]:
        report = judge_answers(attendees, [wrong])
        bug = wrong_answer(report, "attendees")
        assert successes(report) == 0 and bug is not None and bug.severity == "high", wrong
    extra = wrong_answer(
        judge_answers(attendees, ["Ingrid Falk, Tobias Brandt, Mei Chen and Oskar Lund."]), "attendees"
    )
    assert extra.details["extra"] == ["Oskar Lund"] and extra.details["missing"] == []
    assert "names Oskar Lund, not in the expected list" in extra.observed


def test_a_plain_string_result_is_checked() -> None:
    room = task("room", "Lindgren room")
    assert identifying_payload("Lindgren room", expected=True) == {
        "values": [["Lindgren room"]],
        "match": "all",
    }
    assert successes(judge_answers(room, ["The budget review is in the Lindgren room."])) == 1
    wrong = judge_answers(room, ["It is in the Harbour room."])
    assert successes(wrong) == 0 and wrong_answer(wrong, "room") is not None


def test_mapping_and_nested_results() -> None:
    mapping = task("where-when", {"room": "Lindgren room", "day": "2026-03-02"})
    assert successes(judge_answers(mapping, ["Lindgren room, on March 2, 2026."])) == 1
    assert successes(judge_answers(mapping, ["Lindgren room, on March 9, 2026."])) == 0

    nested = task(
        "nested",
        {"meeting": {"title": "Budget review", "attendees": ["Ingrid Falk", "Mei Chen"]}, "count": 2},
    )
    assert successes(judge_answers(nested, ["Budget review: 2 people, Mei Chen and Ingrid Falk."])) == 1
    report = judge_answers(nested, ["Budget review: 2 people, Mei Chen and Priya Nair."])
    bug = wrong_answer(report, "nested")
    assert bug.details["missing"] == ["Ingrid Falk"] and bug.details["extra"] == ["Priya Nair"]


def test_numbers_in_words_or_digits_and_booleans() -> None:
    count = task("how-many", 3)
    assert successes(judge_answers(count, ["Three people attended.", "3 people attended."])) == 2
    assert successes(judge_answers(count, ["Four people attended."])) == 0
    frozen = task("frozen", True)
    assert successes(judge_answers(frozen, ["Yes, it is frozen until the audit closes."])) == 1
    # a decimal's trailing zeros are the same number: a price returned as 12.0, said as 12 or $12.00
    price = task("price", 12.0)
    assert successes(judge_answers(price, ["It costs 12 euros.", "It costs $12.00.", "Price: 12.0"])) == 3
    assert successes(judge_answers(price, ["It costs 120 euros.", "It costs 12.5 euros."])) == 0


# --- the baseline on the real server --------------------------------------------------------------

TASKS = [
    {
        "task_id": "notes-text",
        "prompt": "What was decided about the travel budget in the budget review?",
        "task_type": "deterministic",
        "reference_calls": [{"tool": "meeting_notes", "arguments": {"meeting_id": "m-41"}}],
    },
    {
        "task_id": "room",
        "prompt": "Where is the budget review held?",
        "task_type": "deterministic",
        "expected_result": "Lindgren room",
        "reference_calls": [{"tool": "room_of", "arguments": {"meeting_id": "m-41"}}],
    },
    {
        "task_id": "attendees",
        "prompt": "Who attended the budget review?",
        "task_type": "deterministic",
        "expected_result": ["Ingrid Falk", "Tobias Brandt", "Mei Chen"],
        "reference_calls": [{"tool": "get_meeting", "arguments": {"meeting_id": "m-41"}}],
    },
    {
        "task_id": "who-came",
        "prompt": "Who attended the Budget review meeting?",
        "task_type": "deterministic",
        "reference_calls": [{"tool": "get_meeting", "arguments": {"meeting_id": "m-41"}}],
    },
    {"task_id": "free", "prompt": "Which room is booked most?", "task_type": "deterministic"},
]


def write_project(root: Path, tasks: list[dict]) -> Path:
    config = {
        "server": {"name": "meetings", "command": sys.executable, "args": [str(SERVER)]},
        "paths": {"tasks": "tasks.yaml", "runs": "runs", "home": "home"},
    }
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    (root / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}, sort_keys=False))
    return root / "config.yaml"


@pytest.fixture(scope="module")
def live() -> Iterator[ServerUnderTest]:
    with ServerUnderTest(
        ServerConfig(name="meetings", command=sys.executable, args=[str(SERVER)])
    ) as running:
        yield running


def test_unchecked_task_is_shown_in_baseline_validate_and_bug_report(
    tmp_path: Path, live: ServerUnderTest
) -> None:
    path = write_project(tmp_path, TASKS[:4])
    baselined = CliRunner().invoke(main, ["baseline", "--config", str(path)], catch_exceptions=False)
    assert baselined.exit_code == 0, baselined.output
    assert "warning: notes-text: unchecked: the baseline names no values to look for" in baselined.output
    assert (
        "baselined  room: reference_calls, plausibility 1.00 (rules: not an error, not empty, matches "
        "expected_result)" in baselined.output
    )
    assert "warning: room" not in baselined.output
    entries = {e.task_id: e for e in require_baseline(load_config(path)).tasks}

    # A text result without expected_result: no values made of its hours, minutes or ids.
    notes = entries["notes-text"]
    assert notes.result["values"] == [] and notes.warnings[0].startswith("unchecked: ")
    assert entries["room"].result["values"] == [["Lindgren room"]] and entries["room"].warnings == []
    assert entries["room"].plausibility_score == 1.0
    assert entries["room"].plausibility_reason == "not an error, not empty, matches expected_result"
    attendees = entries["attendees"].result
    assert attendees["closed"] == [["Ingrid Falk", "Tobias Brandt", "Mei Chen"]]
    assert entries["attendees"].plausibility_score == 1.0
    # A single record without expected_result: any of its fields identifies it, except what the prompt says.
    [group] = entries["who-came"].result["values"]
    assert "Mei Chen" in group and "m-41" in group and "Budget review" not in group

    validate = CliRunner().invoke(
        main, ["validate", "--offline", "--config", str(path)], catch_exceptions=False
    )
    assert validate.exit_code == 0, validate.output
    assert "warning: task 'notes-text' (baseline): unchecked: the baseline names no values" in validate.output
    assert "'room'" not in validate.output

    run = tmp_path / "runs" / "run-20261201-001" / "traces"
    run.mkdir(parents=True)
    steps = [call("meeting_notes", {"meeting_id": "m-41"}, None)]
    notes_text = live.call_tool("meeting_notes", {"meeting_id": "m-41"}, 10).content[0].text
    steps[0]["result"] = notes_text
    trace = make_trace("notes-text", steps, answer="The travel budget is frozen until the audit closes.")
    (run / "notes-text__demo__r001.json").write_text(trace.model_dump_json())
    result = CliRunner().invoke(
        main, ["evaluate", "--config", str(path), str(run.parent)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    report = read_model(run.parent / "bug_report.json", BugReport)
    assert not [bug for bug in report.bugs if bug.type == "correctness"], "no false wrong answer"
    [stats] = report.tasks
    assert stats.correctness == "unchecked" and "names no values" in stats.correctness_reason
    narrative = (run.parent / "phase2_narrative.md").read_text()
    assert "## Answers not checked" in narrative and "- notes-text: unchecked (" in narrative


def test_validate_warns_about_a_task_with_nothing_to_check(tmp_path: Path) -> None:
    path = write_project(
        tmp_path, [TASKS[1], TASKS[4], {**TASKS[1], "task_id": "empty", "expected_result": []}]
    )
    result = CliRunner().invoke(
        main, ["validate", "--offline", "--config", str(path)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert "warning: task 'free': no expected_result and no reference_calls" in result.output
    assert "warning: task 'empty': its expected_result names nothing to check" in result.output
    assert "'room'" not in result.output


# --- open-ended answers ---------------------------------------------------------------------------


def scripted_judge(verdicts: list[dict]) -> tuple[AnswerJudge, list[str]]:
    """A judge whose model answers from a script, recording the prompts it was sent."""
    prompts: list[str] = []

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompts.append(str(messages[-1].parts[-1].content))
        return ModelResponse(parts=[TextPart(json.dumps(verdicts[len(prompts) - 1]))])

    return AnswerJudge(FunctionModel(reply), "scripted/judge"), prompts


def test_open_ended_answers_are_judged_by_the_model_or_left_unjudged() -> None:
    summary = task("summary", task_type="open_ended")
    answers = [
        "Two budget meetings: the review with Ingrid, Tobias and Mei, and a follow-up a week later.",
        "There were no budget meetings.",
    ]
    unjudged = judge_answers(summary, answers)
    assert successes(unjudged) == 0 and unjudged.tasks[0].undecided == 2 and not unjudged.bugs
    assert unjudged.tasks[0].correctness == "unjudged", "neither a success nor a failure"

    judge, prompts = scripted_judge(
        [
            {"correct": True, "reason": "matches the reference"},
            {"correct": False, "reason": "denies the meetings"},
        ]
    )
    judged = judge_answers(summary, answers, judge=judge)
    assert successes(judged) == 1 and judged.tasks[0].correctness == "judged"
    bug = wrong_answer(judged, "summary")
    assert bug.severity == "medium" and "denies the meetings" in bug.observed
    assert len(prompts) == 2 and "Lindgren room" in prompts[0] and answers[1] in prompts[1]


def test_a_correct_answer_in_other_words_is_not_failed_without_a_judge() -> None:
    summary = task("summary", task_type="open_ended")
    report = judge_answers(summary, ["Finance met twice in early March; the second session settled hiring."])
    assert not report.bugs and report.tasks[0].undecided == 1 and report.tasks[0].correctness == "unjudged"


def test_response_metadata_and_free_text_give_no_values() -> None:
    counted = {"count": 3, "generated_at": "2026-03-02T13:15:00Z", "request_id": 88123, "took_ms": 15}
    assert identifying_payload(counted) == {"values": [[3, "three"]], "match": "all"}
    minutes = "[2026-03-02T13:15:00Z] minutes m-41\nBudget approved at 13:15."
    assert identifying_payload(minutes) == {"values": [], "match": "all"}
    assert identifying_payload('{"count": 42}') == {"values": [[42]], "match": "all"}


def test_evaluate_run_asks_the_phase2_model_to_judge_open_ended_answers(tmp_path: Path) -> None:
    summary = {"task_id": "summary", "prompt": "Summarise the budget meetings.", "task_type": "open_ended"}
    path = write_project(tmp_path, [summary])
    material = {"results": [{"tool": "find_meetings", "arguments": {"topic": "budget"}, "content": FOUND}]}
    write_model(
        tmp_path / "runs" / "baseline.json", Baseline(generated_at=T0, tasks=[entry("summary", material)])
    )
    traces = tmp_path / "runs" / "run-20261201-001" / "traces"
    traces.mkdir(parents=True)
    trace = make_trace("summary", [call("find_meetings", {"topic": "budget"}, FOUND)], answer="No meetings.")
    write_model(traces / "summary__demo__r001.json", trace)
    with FakeOpenAI() as fake:
        fake.enqueue(text_reply(json.dumps({"correct": False, "reason": "both meetings took place"})))
        fake.enqueue(text_reply(json.dumps({"narrative": "One wrong summary.", "bugs": []})))
        data = yaml.safe_load(path.read_text())
        data["providers"] = {
            "endpoints": {"scripted": {"base_url": fake.base_url}},
            "phase2": "scripted/judge",
        }
        path.write_text(yaml.safe_dump(data))
        report = evaluate_run(load_config(path), traces.parent)
        judged = json.dumps(fake.requests[0]["messages"])
    assert "You grade an AI agent's answer" in judged and "No meetings." in judged
    [stats] = report.tasks
    assert stats.correctness == "judged" and stats.successes == 0
    bug = wrong_answer(report, "summary")
    assert bug.severity == "medium" and "both meetings took place" in bug.observed
