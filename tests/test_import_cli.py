"""`mcpipechekr import`: sessions recorded with the real CLIs (tests/fixtures) become traces of a run;
anything else is refused, naming what is wrong, and nothing is written.

Two servers, both real and started over stdio: the bundled example (emailindex),
named in config.yaml as its sessions name it, and tests/servers/shelf_server.py,
named `library` in config.yaml while its recorded sessions call it `shelf`, so
the client prefixes (`shelf_`, `mcp__shelf__`) must be stripped by matching the
server's tool list, not config's name.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from fakes import shelf_scenario as shelf
from fakes.agent_scenarios import FINAL, PROMPT, SECRET, TASK_ID, USAGE
from fakes.openai_server import FakeOpenAI

from mcpipechekr._util.hashing import sha256_file
from mcpipechekr.artifacts import Manifest, RunDir, ToolsSnapshot, read_model
from mcpipechekr.artifacts.manifest import MANIFEST_VERSION
from mcpipechekr.artifacts.rundir import create_run_dir, list_runs
from mcpipechekr.artifacts.trace import ModelTurn, ToolCall, list_traces, read_trace
from mcpipechekr.cli import main
from mcpipechekr.config import load_config
from mcpipechekr.providers import parse_provider
from mcpipechekr.runners.execute import run_phase1
from mcpipechekr.tasks import load_tasks

# Its module fixtures are costly: under pytest-xdist one worker runs the whole module, building them once.
pytestmark = pytest.mark.xdist_group("test_import_cli")

FIXTURES = Path(__file__).resolve().parent / "fixtures"
OPENCODE = FIXTURES / "opencode" / "find-first.export.json"
CLAUDE = FIXTURES / "claude_code" / "find-first.jsonl"
TASKS = Path(__file__).resolve().parents[1] / "tasks.yaml"
SHELF_SERVER = shelf.SHELF_SERVER


@pytest.fixture()
def project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, emailindex_dir: Path, emailindex_db: Path
) -> Path:
    """A config.yaml naming the example server (with a secret in its env) and the repo's tasks; no run."""
    monkeypatch.setenv("IMPORT_TEST_TOKEN", SECRET)
    config = {
        "server": {
            "name": "emailindex",
            "command": sys.executable,
            "args": ["server.py"],
            "cwd": str(emailindex_dir),
            "env": {"EMAILINDEX_API_TOKEN": "${IMPORT_TEST_TOKEN}", "EMAILINDEX_DB": str(emailindex_db)},
        },
        "paths": {"tasks": str(TASKS), "runs": str(tmp_path / "runs")},
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    return tmp_path


def invoke(project: Path, *args: str):
    return CliRunner().invoke(main, ["import", *args, "--config", str(project / "config.yaml")])


def test_an_opencode_export_becomes_the_next_trace_of_the_latest_run(project: Path):
    create_run_dir(project / "runs")
    latest = create_run_dir(project / "runs")
    result = invoke(project, "--from", "opencode", str(OPENCODE), "--task", TASK_ID)
    assert result.exit_code == 0, result.output
    [path] = list_traces(latest)
    assert f"wrote {path}: completed, 3 model turn(s), 2 tool call(s), 672 tokens" in result.output

    trace = read_trace(path)
    assert (trace.runner, trace.provider, trace.model, trace.repetition) == (
        "import",
        "fake/fake-model",
        "fake-model",
        1,
    )
    assert (trace.prompt, trace.final_answer, trace.status) == (PROMPT, FINAL, "completed")
    turns = [step for step in trace.steps if isinstance(step, ModelTurn)]
    calls = [step for step in trace.steps if isinstance(step, ToolCall)]
    assert [(turn.usage.input_tokens, turn.usage.output_tokens) for turn in turns] == USAGE
    assert [call.tool for call in calls] == ["count_emails", "query_email_database"]
    assert "fts.rank" in calls[1].error_text

    again = invoke(project, "--from", "opencode", str(OPENCODE), "--task", TASK_ID)
    assert again.exit_code == 0, again.output
    assert [read_trace(p).repetition for p in list_traces(latest)] == [1, 2]
    assert read_trace(path) == trace  # the first import is untouched


def test_a_claude_code_log_goes_into_the_named_run(project: Path):
    older = create_run_dir(project / "runs")
    newer = create_run_dir(project / "runs")
    result = invoke(project, "--from", "claude-code", str(CLAUDE), "--task", TASK_ID, "--run", older.run_id)
    assert result.exit_code == 0, result.output
    assert list_traces(newer) == []
    [path] = list_traces(older)
    trace = read_trace(path)
    assert (trace.runner, trace.provider, trace.status) == ("import", "anthropic/claude-fake-1", "completed")
    assert trace.prompt.startswith(
        "When was Ron Chinn first mentioned"
    )  # the task's: stream-json has no prompt
    assert [step.tool for step in trace.steps if isinstance(step, ToolCall)] == [
        "count_emails",
        "query_email_database",
    ]
    assert (trace.totals.input_tokens, trace.totals.output_tokens) == (606, 66)


def test_secrets_are_redacted_from_the_imported_trace(project: Path, tmp_path: Path):
    export = json.loads(OPENCODE.read_text())
    tool = next(p for p in export["messages"][1]["parts"] if p["type"] == "tool")
    tool["state"]["output"] = f"token={SECRET}"
    planted = tmp_path / "planted.json"
    planted.write_text(json.dumps(export))
    run = create_run_dir(project / "runs")
    result = invoke(
        project, "--from", "opencode", str(planted), "--task", TASK_ID, "--provider", "mine/model"
    )
    assert result.exit_code == 0, result.output
    [path] = list_traces(run)
    assert path.name == f"{TASK_ID}__mine_model__r001.json"
    assert SECRET not in path.read_text()
    assert "token=" in path.read_text()


@pytest.mark.parametrize(
    ("kind", "content", "message"),
    [
        ("opencode", "this is not json", "not an opencode export: the file is not JSON"),
        ("opencode", CLAUDE.read_text(), "not an opencode export: the file is not JSON"),
        (
            "opencode",
            '{"info": {"id": "ses_1"}, "messages": [{"info": {}}]}',
            "not an opencode export: messages[0].info: no `role`",
        ),
        ("claude-code", OPENCODE.read_text(), "not a Claude Code stream-json log: line 1 is not JSON"),
        (
            "claude-code",
            '{"type": "system", "subtype": "init"}\n',
            "not a Claude Code stream-json log: it has no `assistant`",
        ),
    ],
)
def test_malformed_input_is_refused_and_nothing_is_written(
    project: Path, kind: str, content: str, message: str
):
    run = create_run_dir(project / "runs")
    bad = project / "session.bad"
    bad.write_text(content)
    result = invoke(project, "--from", kind, str(bad), "--task", TASK_ID)
    assert result.exit_code == 2
    assert f"{bad}: {message}" in result.output
    assert not run.traces.exists() or list(run.traces.iterdir()) == []


def test_a_wrong_task_run_or_kind_is_refused(project: Path):
    result = invoke(project, "--from", "opencode", str(OPENCODE), "--task", TASK_ID, "--run", "latest")
    assert result.exit_code == 2
    assert "there are no runs yet, so there is no `latest` run; leave out --run" in result.output
    run = create_run_dir(project / "runs")
    result = invoke(
        project, "--from", "opencode", str(OPENCODE), "--task", TASK_ID, "--run", run.run_id, "--new-run"
    )
    assert result.exit_code == 2
    assert f"--run {run.run_id} and --new-run contradict each other" in result.output
    result = invoke(project, "--from", "opencode", str(OPENCODE), "--task", "no-such-task")
    assert result.exit_code == 2 and f"{TASKS}: no task `no-such-task`" in result.output
    result = invoke(
        project, "--from", "opencode", str(OPENCODE), "--task", TASK_ID, "--run", "run-20000101-001"
    )
    assert result.exit_code == 2 and "no run `run-20000101-001`" in result.output
    result = invoke(project, "--from", "cursor", str(OPENCODE), "--task", TASK_ID)
    assert result.exit_code == 2 and "'cursor' is not one of 'opencode', 'claude-code'" in result.output
    assert not run.traces.exists()


def test_help_names_both_formats():
    result = CliRunner().invoke(main, ["import", "--help"])
    assert result.exit_code == 0
    assert "opencode export" in result.output and "stream-json" in result.output


# --- a server named otherwise than in its sessions ------------------------------------------------

SHELF_SESSIONS = {
    "opencode": FIXTURES / "opencode" / "shelf.export.json",
    "claude-code": FIXTURES / "claude_code" / "shelf.jsonl",
}
SHELF_BUILTIN_SESSIONS = {
    "opencode": FIXTURES / "opencode" / "shelf-builtin.export.json",
    "claude-code": FIXTURES / "claude_code" / "shelf-builtin.jsonl",
}
CLIENT_VERSIONS = {"opencode": "1.18.33", "claude-code": "2.1.332"}
PLAIN_CALLS = [name for name, _ in shelf.CALLS]


@pytest.fixture()
def library(tmp_path: Path) -> Path:
    """A project whose config.yaml names the shelf server `library` (its sessions call it `shelf`)."""
    assert shelf.SESSION_SERVER_NAME != "library"
    shelf.write_project(tmp_path, "library")
    return tmp_path


def shelf_import(project: Path, kind: str, session: Path, *args: str):
    return invoke(project, "--from", kind, str(session), "--task", shelf.TASK_ID, *args)


def bug_ids(project: Path, run: RunDir) -> list[str]:
    result = CliRunner().invoke(
        main,
        ["evaluate", run.run_id, "--format", "json", "--config", str(project / "config.yaml")],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    return sorted(bug["id"] for bug in json.loads(result.stdout)["bugs"])  # the summary is on stderr


@pytest.fixture(scope="module")
def native_bug_ids(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Bug ids of a native run of the shelf script: the pydantic-ai agent, scripted over real HTTP,
    calling the live server through the capture proxy, evaluated by `mcpipechekr evaluate`."""
    project = tmp_path_factory.mktemp("native")
    with FakeOpenAI(shelf.openai_responder(tool_prefix="")) as fake:
        config_path = shelf.write_project(project, "library", {"fake": {"base_url": fake.base_url}})
        config = load_config(config_path)
        run = create_run_dir(config.paths.runs)
        spec = parse_provider("fake/fake-model", config.providers.endpoints)
        [path] = run_phase1(config, run, load_tasks(config.paths.tasks).tasks, [spec], progress=False)
    trace = read_trace(path)
    assert (trace.runner, trace.status) == ("native", "completed")
    assert [step.tool for step in trace.steps if isinstance(step, ToolCall)] == PLAIN_CALLS
    return bug_ids(project, run)


@pytest.mark.parametrize("kind", sorted(SHELF_SESSIONS))
def test_a_session_of_a_server_named_otherwise_gets_plain_tool_names_and_the_native_runs_bugs(
    library: Path, kind: str, native_bug_ids: list[str]
):
    result = shelf_import(library, kind, SHELF_SESSIONS[kind])
    assert result.exit_code == 0, result.output
    [run] = list_runs(library / "runs")
    [path] = list_traces(run)
    trace = read_trace(path)
    assert trace.runner == "import" and trace.status == "completed" and trace.status_reason is None
    assert [step.tool for step in trace.steps if isinstance(step, ToolCall)] == PLAIN_CALLS
    assert trace.final_answer == shelf.FINAL

    imported = bug_ids(library, run)
    assert imported == native_bug_ids
    # The bugs the calls show, under the server's tool names; no wrong-tool bug from a prefix.
    assert {"EFF-repeated-calls-search-books", "BUG-no-such-column-loans-due-date-get-book"} <= set(imported)
    assert not [bug for bug in imported if "shelf" in bug or "wrong-tool" in bug]


@pytest.mark.parametrize("kind", sorted(SHELF_SESSIONS))
def test_import_with_no_run_creates_one_whose_manifest_says_imported(library: Path, kind: str):
    session = SHELF_SESSIONS[kind]
    result = shelf_import(library, kind, session)
    assert result.exit_code == 0, result.output
    [run] = list_runs(library / "runs")
    assert result.output.startswith(f"created run {run.run_id} for the import: {run.root}\n")
    [path] = list_traces(run)

    manifest = read_model(run.manifest, Manifest)
    assert manifest.version == MANIFEST_VERSION  # the current format, written by the import
    assert (manifest.status, manifest.task_ids) == ("completed", [shelf.TASK_ID])
    assert manifest.server.name == "library" and manifest.providers.phase1 == read_trace(path).provider
    [entry] = manifest.imports
    assert (entry.trace, entry.task_id, entry.runner, entry.client_version, entry.source_name) == (
        path.name,
        shelf.TASK_ID,
        kind,
        CLIENT_VERSIONS[kind],
        session.name,
    )
    assert entry.source_hash == sha256_file(session)
    # The names were mapped against the live server's list, kept as the run's tools.json.
    tools = read_model(run.tools, ToolsSnapshot)
    assert [tool.name for tool in tools.tools] == ["search_books", "books", "get_book"]

    again = shelf_import(library, kind, session)  # no --run: the latest run, the next repetition
    assert again.exit_code == 0, again.output
    assert not again.output.startswith("created") and list_runs(library / "runs") == [run]
    assert [read_trace(p).repetition for p in list_traces(run)] == [1, 2]
    assert [e.trace for e in read_model(run.manifest, Manifest).imports] == [p.name for p in list_traces(run)]

    fresh = shelf_import(library, kind, session, "--new-run")
    assert fresh.exit_code == 0, fresh.output
    first, second = list_runs(library / "runs")
    assert first == run and fresh.output.startswith(f"created run {second.run_id}")
    assert [read_trace(p).repetition for p in list_traces(second)] == [1]


def test_an_existing_runs_tools_json_is_used_without_starting_the_server(library: Path):
    assert shelf_import(library, "opencode", SHELF_SESSIONS["opencode"]).exit_code == 0
    config = yaml.safe_load((library / "config.yaml").read_text())
    config["server"]["args"] = [str(SHELF_SERVER.parent / "tiny_server.py"), "--exit-at-start", "3"]
    (library / "config.yaml").write_text(yaml.safe_dump(config))
    result = shelf_import(library, "claude-code", SHELF_SESSIONS["claude-code"])
    assert result.exit_code == 0, result.output
    [run] = list_runs(library / "runs")
    assert [read_trace(p).runner for p in list_traces(run)] == ["import", "import"]

    with_new_run = shelf_import(library, "claude-code", SHELF_SESSIONS["claude-code"], "--new-run")
    assert with_new_run.exit_code == 2  # a new run takes the live server's tools: this one does not start
    assert "exited with code 3 during start-up" in with_new_run.output
    assert list_runs(library / "runs") == [run]


@pytest.mark.parametrize(
    ("kind", "old", "new"),
    [
        ("opencode", '"shelf_get_book"', '"shelf_fetch_book"'),
        ("claude-code", '"mcp__shelf__get_book"', '"mcp__shelf__fetch_book"'),
    ],
)
def test_an_unlisted_tool_of_the_server_fails_naming_the_file_and_tool_and_writes_nothing(
    library: Path, kind: str, old: str, new: str
):
    renamed = library / SHELF_SESSIONS[kind].name
    text = SHELF_SESSIONS[kind].read_text()
    assert old in text
    renamed.write_text(text.replace(old, new))
    unknown = new.strip('"')

    result = shelf_import(library, kind, renamed)
    assert result.exit_code == 2
    assert f"Error: {renamed}: the session calls 1 tool(s) the server does not list: `{unknown}`." in (
        result.output
    )
    assert "the tools listed by the running server 'library' are: search_books, books, get_book" in (
        result.output
    )
    assert "Nothing was written." in result.output
    assert list_runs(library / "runs") == []

    assert shelf_import(library, kind, SHELF_SESSIONS[kind]).exit_code == 0
    [run] = list_runs(library / "runs")
    before = {path: path.read_bytes() for path in run.root.rglob("*") if path.is_file()}
    result = shelf_import(library, kind, renamed)
    assert result.exit_code == 2 and f"`{unknown}`" in result.output
    assert f"the tools listed by {run.tools} are: search_books, books, get_book" in result.output
    assert {path: path.read_bytes() for path in run.root.rglob("*") if path.is_file()} == before


@pytest.mark.parametrize("kind", sorted(SHELF_BUILTIN_SESSIONS))
def test_the_clients_own_tools_stay_as_calls_that_never_reached_the_server(library: Path, kind: str):
    builtin, _ = shelf.BUILTIN[kind]
    result = shelf_import(library, kind, SHELF_BUILTIN_SESSIONS[kind])
    assert result.exit_code == 0, result.output
    assert f"note: not the server's tools, kept as calls that never reached it: {builtin}\n" in (
        result.output
    )
    [run] = list_runs(library / "runs")
    [path] = list_traces(run)
    trace = read_trace(path)
    calls = [step for step in trace.steps if isinstance(step, ToolCall)]
    assert [call.tool for call in calls] == [builtin, *PLAIN_CALLS]
    assert not calls[0].is_error and "catalogue" in calls[0].result_content[0]["text"]
    assert trace.status == "completed"
    assert trace.status_reason == (
        f"1 tool call(s) of the session were not to the server's tools (the client's own or another "
        f"server's): {builtin}"
    )
