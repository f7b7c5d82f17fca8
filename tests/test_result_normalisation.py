"""Tool results priced as the model saw them, whichever client ran the session.

The end-to-end test runs one scripted session on tests/servers/ledger_server.py
three ways: live with the native runner (pydantic-ai against the scripted
OpenAI-compatible fake), through the real opencode CLI (same fake; its
`opencode export` imported with `mcpipechekr import`) and through the real
Claude Code CLI (the scripted Anthropic fake; its stream-json log imported).
The three runs are evaluated in one project and must report the same bugs at
the same token costs. The server's results have the shapes clients differ on:
a list sent as one text block per item plus structuredContent (Claude Code
shows it as one compact JSON text, opencode joins the blocks with blank lines,
pydantic-ai passes the structured data) and a text of about 340 KB, which
Claude Code replaces with a note that it saved it to a file and opencode
truncates to about 50 KB.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
import yaml
from click.testing import CliRunner
from fakes import ledger_scenario as ledger
from fakes.agent_cli import isolated_home, require_cli
from fakes.anthropic_server import FakeAnthropic
from fakes.openai_server import FakeOpenAI

from mcpipechekr.artifacts.rundir import create_run_dir, list_runs
from mcpipechekr.artifacts.tool_result import seen_size, split_joined_text
from mcpipechekr.artifacts.trace import ToolCall, Trace, list_traces, read_trace, tool_call_from_result
from mcpipechekr.capture import journal_tool_calls, proxy_server
from mcpipechekr.cli import main
from mcpipechekr.config import load_config
from mcpipechekr.evaluate.base import result_json
from mcpipechekr.providers import ProviderSpec, parse_provider
from mcpipechekr.runners.assemble import assemble_trace
from mcpipechekr.runners.base import RunnerOutput, RunRequest
from mcpipechekr.runners.claude_code import ClaudeCodeRunner, preview_full_size
from mcpipechekr.runners.execute import run_phase1
from mcpipechekr.runners.opencode import OpencodeRunner
from mcpipechekr.runners.opencode_export import truncated_full_size
from mcpipechekr.tasks import Task, load_tasks

# Its module fixtures are costly: under pytest-xdist one worker runs the whole module, building them once.
pytestmark = pytest.mark.xdist_group("test_result_normalisation")

ORDERS = [
    {"order_id": 7, "customer": "Ada", "memo": "left at the door"},
    {"order_id": 9, "customer": "Ada", "memo": "gift wrapped"},
]


def _sdk_blocks(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A list result as the Python SDK sends it: one indented JSON text block per item."""
    return [{"type": "text", "text": json.dumps(item, indent=2)} for item in items]


def _call(**fields: Any) -> ToolCall:
    return tool_call_from_result(
        index=0, call_id="c", tool="list_orders", arguments={}, latency_ms=0.0, **fields
    )


# --- the rule, on the shapes the clients produce -------------------------------------------------


def test_text_and_structured_content_are_priced_once_and_json_by_its_compact_form():
    structured = {"result": ORDERS}
    both = _call(content=_sdk_blocks(ORDERS), structured_content=structured)
    compact_text = _call(content=[{"type": "text", "text": orjson.dumps(structured).decode()}])
    only_structured = _call(content=[], structured_content=structured)
    items = sum(len(orjson.dumps(item)) for item in ORDERS)
    assert both.result_bytes == items  # the blocks, not the blocks and the structured copy
    assert abs(compact_text.result_bytes - items) <= len(b'{"result":[,]}')
    assert only_structured.result_bytes == len(orjson.dumps(structured))
    assert both.structured_content == structured  # kept for the analyzers, not priced
    assert not both.result_preview and both.result_bytes_full is None


def test_joined_text_blocks_are_split_back_into_the_blocks():
    blocks = [block["text"] for block in _sdk_blocks(ORDERS)]
    assert split_joined_text("\n\n".join(blocks)) == blocks
    assert split_joined_text("\n\n".join(["2 orders:", *blocks, "end of list"])) == [
        "2 orders:",
        *blocks,
        "end of list",
    ]
    prose = "First paragraph.\n\nSecond paragraph with {braces}."
    assert split_joined_text(prose) == [prose]
    whole = json.dumps({"orders": ORDERS}, indent=2)
    assert split_joined_text(whole) == [whole]


def test_a_result_sent_as_several_json_blocks_reads_as_the_list_of_them():
    call = _call(content=_sdk_blocks(ORDERS))
    assert result_json(call) == ORDERS
    mixed = _call(content=[{"type": "text", "text": "2 orders"}, *_sdk_blocks(ORDERS)])
    assert result_json(mixed) is None


def test_a_preview_is_priced_as_shown_and_the_whole_size_kept():
    whole = [{"type": "text", "text": "x" * 40_000}]
    note = [{"type": "text", "text": "Output too large, saved to a file."}]
    call = _call(content=whole, structured_content={"result": "x" * 40_000}, shown=note)
    assert call.result_preview and call.result_content == note
    assert call.result_bytes == len(note[0]["text"])
    assert call.result_bytes_full == 40_000 and call.result_tokens_full == 10_000
    assert call.whole_result_tokens == 10_000
    assert seen_size(note) == (call.result_bytes, call.result_tokens_estimated)


def test_an_older_trace_without_the_new_fields_still_reads(tmp_path: Path):
    call = _call(content=_sdk_blocks(ORDERS)).model_dump(mode="json")
    assert not {"result_preview", "result_bytes_full", "result_tokens_full"} & set(call)
    trace = Trace.model_validate(
        {
            "task_id": "t",
            "provider": "demo",
            "runner": "demo",
            "prompt": "p",
            "started_at": "2024-01-01T00:00:00Z",
            "status": "completed",
            "steps": [call],
        }
    )
    [step] = trace.steps
    assert isinstance(step, ToolCall) and step.whole_result_tokens == step.result_tokens_estimated
    # And a call the model saw whole is written with the earlier fields only, for earlier readers.
    assert step.model_dump(mode="json") == call
    shown = _call(content=_sdk_blocks(ORDERS), shown=[{"type": "text", "text": "cut"}])
    assert shown.model_dump(mode="json")["result_bytes_full"] == shown.result_bytes_full


def test_the_clients_previews_are_recognised_with_the_whole_size_they_state():
    note = (
        "Error: result (342,649 characters) exceeds maximum allowed tokens. Output has been saved to "
        "/tmp/x/tool-results/mcp-ledger-export.txt.\nFormat: JSON with schema: {result: string}"
    )
    assert preview_full_size([{"type": "text", "text": note}], None) == (342_649, 85_663)
    assert preview_full_size([{"type": "text", "text": note}], {"result": "ab"}) == (15, 4)
    assert preview_full_size([{"type": "text", "text": "Error: no such order"}], None) is None
    head = "1000\tAda\n" * 10
    cut = f"{head}\n\n...283944 bytes truncated...\n\nThe tool call succeeded but the output was truncated."
    assert truncated_full_size(cut) == (len(head) + 283_944, -(-(len(head) + 283_944) // 4))
    lines = f"{head}\n\n...12 lines truncated...\n\nThe tool call succeeded but the output was truncated."
    assert truncated_full_size(lines)[0] == len(lines.encode())


# --- one session, three clients ------------------------------------------------------------------


def _request(folder: Path, provider: ProviderSpec, endpoints: dict[str, Any] | None = None) -> RunRequest:
    """The ledger task through the capture proxy, as a runner gets it."""
    folder.mkdir(parents=True)
    data = {
        "server": ledger.server_config(),
        "providers": {"endpoints": endpoints or {}},
        "timeouts": {"tool_call_s": 30, "task_s": 120},
    }
    (folder / "config.yaml").write_text(yaml.safe_dump(data))
    config = load_config(folder / "config.yaml")
    journal, workdir = folder / "journal.jsonl", folder / "work"
    workdir.mkdir()
    task = Task(task_id=ledger.TASK_ID, prompt=ledger.PROMPT, task_type="deterministic")
    return RunRequest(
        task=task, prompt=ledger.PROMPT, provider=provider, repetition=1,
        server=proxy_server(config.server, journal, config.server.name), journal=journal,
        workdir=workdir, config=config, timeout_s=120, max_requests=10,
    )  # fmt: skip


def _evaluate(project: Path, run_id: str) -> dict[str, dict[str, Any]]:
    result = CliRunner().invoke(
        main,
        ["evaluate", run_id, "--format", "json", "--config", str(project / "config.yaml")],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    return {bug["id"]: bug for bug in json.loads(result.stdout)["bugs"]}


def _import(project: Path, kind: str, session: Path) -> str:
    result = CliRunner().invoke(
        main,
        ["import", "--from", kind, str(session), "--task", ledger.TASK_ID, "--new-run"]
        + ["--config", str(project / "config.yaml")],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    return list_runs(project / "runs")[-1].run_id


class Sessions:
    """What the three clients did with the scripted session, and the runs it became."""

    def __init__(self, project: Path) -> None:
        self.project = project
        self.runs: dict[str, str] = {}
        self.live: dict[str, Trace] = {}
        self.outputs: dict[str, RunnerOutput] = {}

    def trace(self, client: str) -> Trace:
        [path] = list_traces(project_run(self.project, self.runs[client]))
        return read_trace(path)


def project_run(project: Path, run_id: str) -> Path:
    return project / "runs" / run_id


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> Sessions:
    opencode = require_cli("opencode", "MCPIPECHEKR_OPENCODE")
    claude = require_cli("claude", "MCPIPECHEKR_CLAUDE")
    root = tmp_path_factory.mktemp("ledger")
    project = root / "project"
    project.mkdir()
    done = Sessions(project)

    with FakeOpenAI(ledger.openai_responder("")) as fake:
        config = load_config(ledger.write_project(project, {"fake": {"base_url": fake.base_url}}))
        run = create_run_dir(config.paths.runs)
        spec = parse_provider("fake/fake-model", config.providers.endpoints)
        run_phase1(config, run, load_tasks(config.paths.tasks).tasks, [spec], progress=False)
    done.runs["native"] = run.run_id

    with FakeOpenAI(ledger.openai_responder(f"{ledger.SERVER_NAME}_")) as fake:
        request = _request(
            root / "opencode",
            ProviderSpec(provider="fake", model="fake-model"),
            {"fake": {"base_url": fake.base_url}},
        )
        runner = OpencodeRunner(binary=opencode, env=isolated_home(root / "opencode" / "home"))
        output = anyio.run(runner.run, request)
    assert output.status == "completed", output.status_reason
    done.outputs["opencode"] = output
    done.live["opencode"] = assemble_trace(
        request, output, journal_tool_calls(request.journal), runner="opencode"
    )
    done.runs["opencode"] = _import(project, "opencode", request.workdir / "opencode-export.json")

    with FakeAnthropic(ledger.anthropic_responder(f"mcp__{ledger.SERVER_NAME}__")) as fake:
        request = _request(root / "claude", ProviderSpec(provider="anthropic", model="claude-fake-1"))
        env = {
            **isolated_home(root / "claude" / "home"),
            "ANTHROPIC_BASE_URL": fake.base_url,
            "ANTHROPIC_API_KEY": "sk-ant-x",
        }
        output = anyio.run(ClaudeCodeRunner(binary=claude, env=env).run, request)
    assert output.status == "completed", output.status_reason
    done.outputs["claude-code"] = output
    done.live["claude-code"] = assemble_trace(
        request, output, journal_tool_calls(request.journal), runner="claude-code"
    )
    done.runs["claude-code"] = _import(project, "claude-code", request.workdir / "claude-stream.jsonl")
    return done


CLIENTS = ("native", "opencode", "claude-code")


def _calls(trace: Trace) -> list[ToolCall]:
    return [step for step in trace.steps if isinstance(step, ToolCall)]


@pytest.mark.slow
def test_the_same_session_gets_the_same_bugs_and_costs_whichever_client_ran_it(sessions: Sessions):
    reports = {client: _evaluate(sessions.project, sessions.runs[client]) for client in CLIENTS}
    native = reports["native"]
    # The planted waste is found the same way everywhere: the repeat, the memo nobody read, the
    # extra calls, the oversized export.
    assert set(native) == {
        "EFF-repeated-calls-list-orders",
        "EFF-unread-fields-list-orders",
        "EFF-too-many-calls-ada-spend",
        "EFF-oversized-result-export-ledger",
    }
    for client in ("opencode", "claude-code"):
        assert sorted(reports[client]) == sorted(native), client
        calls = {call.index: call for call in _calls(sessions.trace(client))}
        for bug_id, bug in native.items():
            other = reports[client][bug_id]
            steps = {step for evidence in other["evidence"] for step in evidence["steps"]}
            if not any(calls[step].result_preview for step in steps if step in calls):
                for key in ("token_cost_observed", "token_cost_optimal", "token_cost_of_gap"):
                    assert other[key] == pytest.approx(bug[key], rel=0.05), (client, bug_id, key)
            else:
                # The client showed its model a preview of the export: it paid for the preview only.
                assert other["token_cost_observed"] < bug["token_cost_observed"] / 5, (client, bug_id)
        export = _calls(sessions.trace(client))[2]
        oversized = reports[client]["EFF-oversized-result-export-ledger"]
        assert oversized["token_cost_observed"] == export.result_tokens_estimated + 1  # `{}`: 1 token


@pytest.mark.slow
def test_a_result_the_client_cut_short_is_priced_as_shown_with_the_whole_size_kept(sessions: Sessions):
    native = _calls(sessions.trace("native"))[2]
    assert native.tool == "export_ledger" and not native.result_preview
    whole = native.result_tokens_estimated
    assert whole > 80_000  # the text once: not again as its structuredContent copy
    shown = {"opencode": (10_000, 15_000), "claude-code": (100, 1_000)}
    traces = {f"{client} import": sessions.trace(client) for client in shown}
    traces.update({f"{client} live": trace for client, trace in sessions.live.items()})
    for name, trace in traces.items():
        call = _calls(trace)[2]
        low, high = shown[name.split()[0]]
        assert call.result_preview, name
        assert low <= call.result_tokens_estimated <= high, (name, call.result_tokens_estimated)
        assert call.whole_result_tokens == pytest.approx(whole, rel=0.05), name
    # The live trace keeps what the model was shown, and the journal's whole result size.
    live = _calls(sessions.live["claude-code"])[2]
    assert "exceeds maximum allowed tokens" in live.result_content[0]["text"]
    assert live.result_tokens_full == native.result_tokens_estimated


@pytest.mark.slow
def test_list_results_read_as_the_same_data_from_every_client(sessions: Sessions):
    expected = [order for order in _native_orders(sessions)]
    for client in CLIENTS:
        call = _calls(sessions.trace(client))[0]
        data = result_json(call)
        rows = data["result"] if isinstance(data, dict) else data
        assert rows == expected, client
    opencode = _calls(sessions.trace("opencode"))[0]
    assert len(opencode.result_content) == len(expected)  # the joined blocks, split back


def _native_orders(sessions: Sessions) -> list[dict[str, Any]]:
    data = result_json(_calls(sessions.trace("native"))[0])
    assert isinstance(data, dict)
    return data["result"]
