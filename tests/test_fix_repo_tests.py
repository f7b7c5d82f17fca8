"""Phase 3 with `fix.test_command`: the repository's own tests decide whether a claimed fix is committed.

Every test works on a small server of its own (a greenhouse's plant list, not
the bundled example) made a real git repository by `prepare_repo`, with a
real trace as the bug's evidence and a stand-in coding agent: a script run
through `agent: shell` that edits the code as told by its mode and keeps a
copy of each prompt it was given outside the repository. The tests are the
repository's own check script, run by the loop as a real process.
"""

from __future__ import annotations

import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import git
import pytest
import yaml

from mcpipechekr._util.yamlsrc import ConfigFileError
from mcpipechekr.artifacts import Bug, BugReport, RunDir, create_run_dir, write_model
from mcpipechekr.artifacts.bug_report import Evidence
from mcpipechekr.artifacts.fix_record import read_fix_record
from mcpipechekr.config import Config, load_config
from mcpipechekr.fix import run_fix_loop
from mcpipechekr.fix.evidence import evidence_lines, file_layout
from mcpipechekr.preflight import preflight_problems
from mcpipechekr.review.decision import record_decision
from mcpipechekr.server.workspace import prepare_repo
from tests.trace_builder import call, make_trace, say

pytestmark = pytest.mark.slow

SECRET = "greenhouse-token-4f9d2a"
BUG_ID = "GAP-no-sort-list-plants"

PLANTS = textwrap.dedent(
    """
    PLANTS = ["fern", "aloe", "mint", "basil"]


    def list_plants():
        return list(PLANTS)
    """
).lstrip()

SERVER = textwrap.dedent(
    """
    from mcp.server.mcpserver import MCPServer

    import plants

    app = MCPServer("greenhouse")


    @app.tool(description="List the plants in the greenhouse.")
    def list_plants() -> list[str]:
        return plants.list_plants()


    if __name__ == "__main__":
        app.run()
    """
).lstrip()

CHECK = textwrap.dedent(
    f"""
    import sys

    import plants

    want = ["aloe", "basil", "fern", "mint"]
    got = plants.list_plants(sort="name")
    if got != want:
        print(f"FAIL: list_plants(sort='name') returned {{got}}, expected {{want}} (token {SECRET})")
        sys.exit(1)
    print("check_plants: 1 passed")
    """
).lstrip()

RIGHT = textwrap.dedent(
    """
    PLANTS = ["fern", "aloe", "mint", "basil"]


    def list_plants(sort=None):
        return sorted(PLANTS) if sort == "name" else list(PLANTS)
    """
).lstrip()

WRONG = RIGHT.replace("sorted(PLANTS)", "sorted(PLANTS, reverse=True)")

AGENT = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    prompt_file, mode, seen = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    seen.mkdir(exist_ok=True)
    run = len(list(seen.iterdir())) + 1
    prompt = prompt_file.read_text()
    (seen / f"{run}.md").write_text(prompt)
    right, wrong = Path(sys.argv[4]).read_text(), Path(sys.argv[5]).read_text()
    if mode == "right" or (mode == "learns" and "returned ['mint', 'fern'" in prompt):
        Path("plants.py").write_text(right)
        print("added sort=name")
    else:
        Path("plants.py").write_text(wrong)
        print("added sort=name (reversed)")
    print("<promise>COMPLETE</promise>")
    """
)


def plants_bug() -> Bug:
    return Bug(
        id=BUG_ID,
        type="feature_gap",
        severity="high",
        source="analyzer",
        tool="list_plants",
        task_id="first-plant-alphabetically",
        trigger="finding the first plant by name with `list_plants`",
        observed="the agent listed every plant and sorted them itself",
        expected="one call that lists the plants sorted by name",
        acceptance_criteria=["list_plants takes sort='name' and returns the plants in name order"],
        token_cost_observed=900,
        token_cost_optimal=300,
        token_cost_of_gap=600,
        task_ids=["first-plant-alphabetically"],
        evidence=[Evidence(task_id="first-plant-alphabetically", trace="traces/first-plant.json", steps=[1])],
    )


def project(
    tmp_path: Path, mode: str, test_command: str | list[str] | None, **fix: object
) -> tuple[Config, git.Repo, RunDir]:
    """The greenhouse repository, config.yaml with the stand-in agent, and an approved one-bug report."""
    template = tmp_path / "greenhouse"
    template.mkdir(parents=True)
    (template / "plants.py").write_text(PLANTS)
    (template / "server.py").write_text(SERVER)
    (template / "check_plants.py").write_text(CHECK)
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "right.py").write_text(RIGHT)
    (tmp_path / "wrong.py").write_text(WRONG)
    command = (
        f"{{python}} {tmp_path / 'agent.py'} {{prompt_file}} {mode} {tmp_path / 'seen'} "
        f"{tmp_path / 'right.py'} {tmp_path / 'wrong.py'}"
    )
    # unconfined: the stand-in records what it saw beside the project (the sandbox: test_fix_sandbox.py)
    fix_config: dict = {"agent": "shell", "command": command, "max_iterations": 3, "sandbox": "off", **fix}
    if test_command is not None:
        fix_config["test_command"] = test_command
    config = {
        "server": {
            "name": "greenhouse",
            "command": sys.executable,
            "args": ["server.py"],
            "cwd": "ws/greenhouse",
            "env": {"GREENHOUSE_TOKEN": "${GREENHOUSE_TOKEN}"},
            "repo": "ws/greenhouse",
            "repo_template": str(template),
            "health": {"timeout_s": 20},
        },
        "paths": {"tasks": "tasks.yaml", "runs": "runs", "home": "home"},
        "fix": fix_config,
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    loaded = load_config(path, environ={"GREENHOUSE_TOKEN": SECRET})
    prepare_repo(loaded.server)
    run = create_run_dir(loaded.paths.runs)
    trace = make_trace(
        "first-plant-alphabetically",
        [
            say("I will list the plants."),
            call("list_plants", {"greenhouse": "north", "token": SECRET}, ["fern", "aloe", "mint", "basil"]),
            say("Sorted myself: aloe."),
        ],
        answer="aloe",
    )
    write_model(run.root / "traces" / "first-plant.json", trace)
    report = BugReport(
        run_id=run.run_id,
        phase1_provider="demo",
        evaluated_at=datetime(2026, 12, 2, 10, 0, tzinfo=UTC),
        bugs=[plants_bug()],
    )
    write_model(run.bug_report, report)
    record_decision(run, "approve", ["keep the default order when no sort is given"])
    return loaded, git.Repo(loaded.server.repo), run


def messages(repo: git.Repo) -> list[str]:
    return [commit.message.strip() for commit in repo.iter_commits()]


def seen_prompts(tmp_path: Path) -> list[str]:
    count = len(list((tmp_path / "seen").iterdir()))
    return [(tmp_path / "seen" / f"{n}.md").read_text() for n in range(1, count + 1)]


def test_passing_tests_let_the_fix_be_committed(tmp_path: Path) -> None:
    config, repo, run = project(tmp_path, "right", "{python} check_plants.py")
    record = run_fix_loop(config, run)

    (entry,) = record.bugs
    assert (entry.status, entry.iterations, entry.files_changed) == ("committed", 1, ["plants.py"])
    assert messages(repo) == [f"fix: {BUG_ID}", "Initial import of greenhouse"]
    tests = entry.runs[0].tests
    assert tests is not None and tests.passed and tests.exit_code == 0
    assert tests.command == f"{sys.executable} check_plants.py"
    assert "check_plants: 1 passed" in tests.output_tail
    assert record.health is not None and record.health.healthy
    assert read_fix_record(run.fix_record) == record


def test_failing_tests_go_back_to_the_agent_and_only_the_corrected_fix_is_committed(tmp_path: Path) -> None:
    config, repo, run = project(tmp_path, "learns", ["{python}", "check_plants.py"])
    record = run_fix_loop(config, run)

    (entry,) = record.bugs
    assert (entry.status, entry.iterations) == ("committed", 2)
    first, second = entry.runs
    assert first.promise and first.tests is not None and not first.tests.passed
    assert first.tests.exit_code == 1
    assert "expected ['aloe', 'basil', 'fern', 'mint']" in first.tests.output_tail
    assert second.tests is not None and second.tests.passed
    assert first.prompt is None and second.prompt == f"fix/{BUG_ID}.prompt-2.md"

    # the second prompt says the tests failed and shows their output, redacted
    one, two = seen_prompts(tmp_path)
    assert "The tests failed" not in one
    assert "## The tests failed after the previous attempt" in two
    assert "returned ['mint', 'fern', 'basil', 'aloe'], expected" in two
    assert SECRET not in two and "${GREENHOUSE_TOKEN}" in two
    assert SECRET not in run.fix_record.read_text() and "${GREENHOUSE_TOKEN}" in first.tests.output_tail

    # one commit, holding the corrected code only
    assert messages(repo) == [f"fix: {BUG_ID}", "Initial import of greenhouse"]
    assert repo.git.show("HEAD:plants.py") == RIGHT.rstrip("\n")
    assert not repo.is_dirty(untracked_files=True)


def test_tests_that_never_pass_leave_the_bug_unresolved_and_the_workspace_restored(tmp_path: Path) -> None:
    config, repo, run = project(tmp_path, "wrong", "{python} check_plants.py")
    before = (Path(repo.working_dir) / "plants.py").read_text()
    record = run_fix_loop(config, run)

    (entry,) = record.bugs
    assert (entry.status, entry.iterations, entry.commit) == ("unresolved", 3, None)
    assert [run_.promise for run_ in entry.runs] == [True, True, True]
    assert all(run_.tests is not None and not run_.tests.passed for run_ in entry.runs)
    assert "the tests still failed after 3 run(s)" in (entry.reason or "") and "exit code 1" in entry.reason
    assert messages(repo) == ["Initial import of greenhouse"] and record.health is None
    assert (Path(repo.working_dir) / "plants.py").read_text() == before
    assert not repo.is_dirty(untracked_files=True)


def test_a_test_run_past_its_time_limit_fails(tmp_path: Path) -> None:
    config, repo, run = project(
        tmp_path, "right", "echo testing; sleep 30", max_iterations=1, test_timeout_s=0.5
    )
    record = run_fix_loop(config, run)
    (entry,) = record.bugs
    tests = entry.runs[0].tests
    assert tests is not None and tests.timed_out and not tests.passed and tests.exit_code is None
    assert "testing" in tests.output_tail and tests.elapsed_s < 20
    assert entry.status == "unresolved" and "timed out" in (entry.reason or "")
    assert messages(repo) == ["Initial import of greenhouse"]


def test_the_prompt_carries_evidence_layout_notes_and_test_command(tmp_path: Path) -> None:
    config, _repo, run = project(tmp_path, "right", "{python} check_plants.py")
    run_fix_loop(config, run)
    (prompt,) = seen_prompts(tmp_path)

    assert "## Evidence: the trace steps that show it" in prompt
    assert "task `first-plant-alphabetically`, step 1: `list_plants(" in prompt
    assert '"greenhouse": "north"' in prompt and "fern" in prompt
    assert SECRET not in prompt and '"token": "${GREENHOUSE_TOKEN}"' in prompt
    assert "list_plants takes sort='name' and returns the plants in name order" in prompt
    assert "keep the default order when no sort is given" in prompt
    layout = prompt.split("## Files in the repository (tracked)")[1]
    assert all(name in layout for name in ("check_plants.py", "plants.py", "server.py"))
    assert f"`{sys.executable} check_plants.py`" in prompt
    assert (run.root / "fix" / f"{BUG_ID}.prompt.md").read_text() == prompt


def test_without_a_test_command_the_promise_alone_commits(tmp_path: Path) -> None:
    config, repo, run = project(tmp_path, "wrong", None)
    record = run_fix_loop(config, run)
    (entry,) = record.bugs
    assert entry.status == "committed" and entry.runs[0].tests is None
    (prompt,) = seen_prompts(tmp_path)
    assert "Run the project's tests if it has any." in prompt and "check_plants" in prompt


def test_preflight_names_a_test_program_that_cannot_be_found(tmp_path: Path) -> None:
    config, _repo, _run = project(tmp_path, "right", ["no-such-test-runner-xyz", "-q"])
    problems = [p for p in preflight_problems(config, ["phase3"]) if "test_command" in p.problem.message]
    assert problems and "no-such-test-runner-xyz" in problems[0].problem.message
    assert problems[0].severity == "error"
    # `mcpipechekr validate` checks every phase set up: the same program is named, as a warning
    (found,) = [p for p in preflight_problems(config) if "test_command" in p.problem.message]
    assert found.severity == "warning" and "no-such-test-runner-xyz" in found.problem.message
    ok, _repo, _run = project(tmp_path / "ok", "right", "{python} check_plants.py && echo done")
    assert not [p for p in preflight_problems(ok, ["phase3"]) if "test_command" in p.problem.message]


def test_test_command_placeholders_are_checked_when_the_config_is_read(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match=r"unknown placeholder\(s\) \{prompt\}"):
        project(tmp_path, "right", "pytest {prompt}")
    with pytest.raises(ConfigFileError, match="must not be empty"):
        project(tmp_path / "empty", "right", [])


def test_evidence_shows_errors_and_names_a_trace_that_cannot_be_read(tmp_path: Path) -> None:
    config, repo, run = project(tmp_path, "right", None)
    trace = make_trace(
        "water-the-fern",
        [call("water", {"plant": "fern", "litres": 2}, error="unknown plant: fern (did you mean 'Fern'?)")],
    )
    write_model(run.root / "traces" / "water.json", trace)
    bug = plants_bug().model_copy(
        update={
            "evidence": [
                Evidence(task_id="water-the-fern", trace="traces/water.json", steps=[0]),
                Evidence(task_id="gone", trace="traces/gone.json", steps=[0]),
            ]
        }
    )
    lines = evidence_lines(bug, run)
    assert lines == [
        '- task `water-the-fern`, step 0: `water({"litres": 2, "plant": "fern"})` '
        "→ error: unknown plant: fern (did you mean 'Fern'?)",
        "- task `gone`: trace traces/gone.json could not be read",
    ]
    assert file_layout(repo) == ["check_plants.py", "plants.py", "server.py"]


def test_long_test_output_is_cut_to_its_end_for_the_agent(tmp_path: Path) -> None:
    command = "{python} -c \"print('\\n'.join(f'line {{i}}' for i in range(3000))); raise SystemExit(2)\""
    config, repo, run = project(tmp_path, "learns", command, max_iterations=2)
    record = run_fix_loop(config, run)
    (entry,) = record.bugs
    tests = entry.runs[0].tests
    assert tests is not None and tests.exit_code == 2 and not tests.passed
    assert tests.output_tail.startswith("[... earlier output cut]\n")
    assert tests.output_tail.endswith("line 2999")
    assert "line 100\n" not in tests.output_tail and len(tests.output_tail) <= 4000 + 30
    assert tests.output_tail in seen_prompts(tmp_path)[1]
    assert entry.status == "unresolved" and messages(repo) == ["Initial import of greenhouse"]
