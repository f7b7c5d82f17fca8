"""Phase 1 when the server does not start: tried again once, then `errored`, never judged as an answer.

The server (tests/servers/flaky_start_server.py) takes a numbered ticket at each
start and fails or serves by a pattern, so which starts fail is fixed whatever
the timing. The agent answers even when it never reached the server, as agent
CLIs do when an MCP server fails to connect: only the journal shows that the
answer came from nowhere. Servers are started ahead of the attempts by the
Phase 1 pool (capture/warm.py); the proxy attaches to them.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest
from fakes.agent_cli import process_alive
from fakes.mcp_runner import TURN_USAGE, ClientRunner, _client

from mcpipechekr.artifacts import RunDir
from mcpipechekr.artifacts.journal import read_journal
from mcpipechekr.artifacts.trace import ModelTurn, read_trace
from mcpipechekr.config import Config, load_config
from mcpipechekr.errors import ServerHalt
from mcpipechekr.evaluate.orchestrate import evaluate_run
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.runners.base import RunnerName, RunnerOutput, RunRequest
from mcpipechekr.runners.execute import run_phase1
from mcpipechekr.session_summary import render_session_summary
from mcpipechekr.steps.baseline import baseline_step
from mcpipechekr.steps.evaluate import report_lines
from mcpipechekr.tasks import Task, load_tasks

SERVER = Path(__file__).parent / "servers" / "flaky_start_server.py"
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
KEYS = ["alpha", "beta", "gamma", "delta"]


def project(root: Path, pattern: str, *, delay_s: float = 0.0) -> Config:
    tickets = root / "tickets"
    (root / "config.yaml").write_text(
        textwrap.dedent(
            f"""\
            server:
              name: flaky
              command: {sys.executable}
              args: [{SERVER}]
              env: {{FLAKY_DIR: "{tickets}", FLAKY_PATTERN: "{pattern}", FLAKY_DELAY_S: "{delay_s}"}}
              health: {{timeout_s: 20}}
            providers: {{phase1: demo}}
            """
        ),
        encoding="utf-8",
    )
    tasks = "tasks:\n" + "".join(
        textwrap.indent(
            textwrap.dedent(
                f"""\
                - task_id: value-of-{key}
                  prompt: What is the value stored under the key {key}?
                  task_type: deterministic
                  expected_tool: lookup
                  reference_calls:
                    - tool: lookup
                      arguments: {{key: {key}}}
                """
            ),
            "  ",
        )
        for key in KEYS
    )
    (root / "tasks.yaml").write_text(tasks, encoding="utf-8")
    return load_config(root / "config.yaml", environ={})


class AnswersAnyway:
    """Looks the key up through the server; without a server, answers from nowhere (a wrong answer)."""

    name: ClassVar[RunnerName] = "native"

    def __init__(self) -> None:
        self.tickets: list[int] = []

    async def run(self, request: RunRequest) -> RunnerOutput:
        key = request.task.task_id.removeprefix("value-of-")
        try:
            async with _client(request) as client:
                ticket = await client.call_tool("ticket", {})
                self.tickets.append(int(ticket.content[0].text))
                result = await client.call_tool("lookup", {"key": key})
                answer = "".join(getattr(block, "text", "") for block in result.content)
        except Exception:
            answer = "value-of-nothing"
        return RunnerOutput(
            status="completed", steps=[ModelTurn(index=0, text=answer, usage=TURN_USAGE)], final_answer=answer
        )


def run(config: Config, runner: Any, concurrency: int = 1) -> list[Path]:
    tasks = load_tasks(config.paths.tasks).tasks
    return run_phase1(
        config,
        RunDir(config.paths.runs / "run-20261205-001"),
        tasks,
        [config.providers.phase1],
        concurrency=concurrency,
        runner_for=lambda spec: runner,
        progress=False,
    )


def test_a_start_that_fails_is_tried_again_and_twice_failed_is_errored_never_judged(tmp_path: Path) -> None:
    # ticket 1: the baseline's start; then Phase 1's, in the order the agents connect: value-of-alpha
    # gets two failing starts (2, 3), beta one that serves (4), gamma a failing one (5), then one that serves.
    config = project(tmp_path, "OFFOFOO")
    assert not baseline_step(config).problems
    runner = AnswersAnyway()
    traces = {read_trace(path).task_id: read_trace(path) for path in run(config, runner)}

    alpha = traces["value-of-alpha"]
    assert alpha.status == "errored"
    assert len(alpha.failed_starts) == 2
    assert all("exited with code 1" in reason for reason in alpha.failed_starts)
    assert alpha.status_reason.startswith("the agent never had a working server (2 tries): ")
    assert [traces[f"value-of-{key}"].status for key in KEYS[1:]] == ["completed"] * 3
    assert len(traces["value-of-gamma"].failed_starts) == 1  # its second try worked
    assert traces["value-of-beta"].failed_starts == traces["value-of-delta"].failed_starts == []
    assert sorted(runner.tickets) == [4, 6, 7]  # every answer came from a server that started

    report = evaluate_run(config, RunDir(config.paths.runs / "run-20261205-001"))
    assert [(item.task_id, item.trace) for item in report.errored] == [
        ("value-of-alpha", "traces/value-of-alpha__demo__r001.json")
    ]
    assert not [bug for bug in report.bugs if "value-of-alpha" in {bug.task_id, *bug.task_ids}]
    assert {stats.task_id for stats in report.tasks} == {f"value-of-{key}" for key in KEYS[1:]}
    assert all(stats.successes == 1 for stats in report.tasks)
    assert report.notes[0].startswith("1 attempt(s) errored (`value-of-alpha`)")
    run_dir = RunDir(config.paths.runs / "run-20261205-001")
    first_line = report_lines(report, run_dir)[0]
    assert first_line.startswith("run-20261205-001: 1 attempt(s) errored (in no figure), ")
    summary = render_session_summary([run_dir]).splitlines()
    assert summary[4].startswith("**Attempts errored (1 in run-20261205-001): an infrastructure failure")
    assert "1 attempt(s) errored and were not evaluated: `value-of-alpha`." in summary


class LooksUpThenHangs(AnswersAnyway):
    """Looks `alpha` up and answers; every other key hangs until the harness cuts it."""

    async def run(self, request: RunRequest) -> RunnerOutput:
        if request.task.task_id != "value-of-alpha":
            await anyio.sleep(60)
        return await super().run(request)


def test_attempts_the_phase_timeout_cut_are_no_answers(tmp_path: Path) -> None:
    """The harness's own timeout is no failure of the agent or the server: the attempts it cut are
    marked so, listed apart by Phase 2 and judged nowhere."""
    config = project(tmp_path, "O" * 10)
    config = config.model_copy(update={"timeouts": config.timeouts.model_copy(update={"phase_s": 4.0})})
    assert not baseline_step(config).problems
    traces = {
        read_trace(path).task_id: read_trace(path) for path in run(config, LooksUpThenHangs(), concurrency=4)
    }
    assert traces["value-of-alpha"].status == "completed" and not traces["value-of-alpha"].cut_by_harness
    cut = [trace for key, trace in traces.items() if key != "value-of-alpha"]
    assert cut and all(trace.status == "incomplete" and trace.cut_by_harness for trace in cut)
    report = evaluate_run(config, RunDir(config.paths.runs / "run-20261205-001"))
    assert sorted(item.task_id for item in report.errored) == sorted(trace.task_id for trace in cut)
    assert all(
        item.reason.startswith("cut short by the harness: the phase ran past") for item in report.errored
    )
    assert {task for bug in report.bugs for task in bug.task_ids} <= {"value-of-alpha"}
    assert [stats.task_id for stats in report.tasks] == ["value-of-alpha"]


def test_a_server_that_never_starts_halts_the_phase_after_three_tries(tmp_path: Path) -> None:
    config = project(tmp_path, "F" * 20)
    with pytest.raises(ServerHalt, match=r"did not start in 3 tries in a row"):
        run(config, AnswersAnyway())
    traces = list((config.paths.runs / "run-20261205-001" / "traces").glob("*.json"))
    statuses = sorted(read_trace(path).status for path in traces)
    assert "completed" not in statuses  # no answer without a server was kept as one


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_servers_are_started_ahead_and_none_is_left_running(tmp_path: Path) -> None:
    config = project(tmp_path, "", delay_s=1.0)
    runner = AnswersAnyway()
    paths = run(config, runner, concurrency=2)
    assert [read_trace(path).status for path in paths] == ["completed"] * 4
    started = [
        next(record for record in read_journal(path) if record.event == "server_started")
        for path in sorted((config.paths.runs / "run-20261205-001" / "journals").glob("*.jsonl"))
    ]
    # every proxy attached to a server the pool had started before the agent asked for it
    assert all((record.detail or "").endswith("before the agent attached") for record in started)
    # two slots and two ahead: four starts, and none more; none of them is left running
    tickets = tmp_path / "tickets"
    assert sorted(int(path.name) for path in tickets.iterdir() if path.name.isdigit()) == [1, 2, 3, 4]
    pids = [int(path.name.removeprefix("started-")) for path in tickets.glob("started-*")]
    assert len(pids) == 4
    assert not [pid for pid in pids if process_alive(pid)]


@pytest.mark.slow
@pytest.mark.parametrize("key", ["time", "memory"])
def test_a_server_of_an_older_revision_refusing_server_discover_is_no_start_failure(
    key: str, tmp_path: Path
) -> None:
    """A client of the newest revision asks `server/discover` first; a published server of an older one
    (memory) answers "Method not found", and the client goes on with `initialize`: a start that worked.
    One that knows `server/discover` (time) is the case without a fallback."""
    import real_servers as published

    server = published.BY_KEY[key]
    cache = published.install()
    (tmp_path / "seed").mkdir()
    config = server.config(cache, server.seed(tmp_path / "seed"))
    tool = {"time": "get_current_time", "memory": "read_graph"}[key]
    arguments = {"timezone": "UTC"} if key == "time" else {}
    runner = ClientRunner(lambda request: [(tool, arguments)])
    (path,) = run_phase1(
        config,
        tmp_path / "run",
        [Task(task_id=f"ask-{key}", prompt=f"Use {tool}.", task_type="deterministic")],
        [ProviderSpec(provider="demo")],
        runner_for=lambda spec: runner,
        progress=False,
    )
    trace = read_trace(path)
    assert (trace.status, trace.failed_starts) == ("completed", [])
    journal = read_journal(tmp_path / "run" / "journals" / f"{path.stem}.jsonl")
    sent = [
        record.message.get("method")
        for record in journal
        if record.direction == "to_server" and isinstance(record.message, dict)
    ]
    assert sent[0] == "server/discover"
    if key == "memory":  # the npm server of an older revision refuses it: the fallback this test is about
        assert sent[1] == "initialize"
