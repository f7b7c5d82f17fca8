"""The consent path for servers that annotate nothing: `check --trust-read-only`, `check.read_only`.

The server is tests/servers/catalog_server.py, a real MCP server over stdio
with no annotations; each of its tools appends its name to `$CATALOG_CALLS`
when it runs, so which tools were called is read from the server's side.
"""

from __future__ import annotations

import shlex
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import mcp_types
import pytest
import yaml
from click.testing import CliRunner
from terminal import at_terminal

from mcpipechekr.artifacts.check_report import CheckReport
from mcpipechekr.check.trust import looks_read_only, parse_tool_names
from mcpipechekr.cli import main

CATALOG = Path(__file__).resolve().parent / "servers" / "catalog_server.py"
COMMAND = shlex.join([sys.executable, str(CATALOG)])
LOOKS_READ_ONLY = ["list_items", "get_item", "search_items", "query_items"]


@pytest.fixture
def calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The file the catalog server appends each called tool's name to; run from an empty folder.

    The file lies outside the folder the server runs in: check watches that folder (PC-12) and would
    rightly count the marker as a write of the tools it trusts as read-only.
    """
    (tmp_path / "project").mkdir()
    monkeypatch.chdir(tmp_path / "project")
    marker = tmp_path / "calls.txt"
    monkeypatch.setenv("CATALOG_CALLS", str(marker))
    return marker


def called(marker: Path) -> set[str]:
    return set(marker.read_text(encoding="utf-8").split()) if marker.exists() else set()


def check(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["check", *args], catch_exceptions=False)
    return result.exit_code, result.output


def write_config(folder: Path) -> Path:
    path = folder / "config.yaml"
    path.write_text(
        "# The catalog under test.\n"
        "server:\n"
        "  name: catalog  # short name\n"
        f"  command: {sys.executable}\n"
        f"  args: [{CATALOG}]\n"
        "check:\n"
        "  call_timeout_s: 20  # per call\n",
        encoding="utf-8",
    )
    return path


def tool(name: str, description: str, properties: dict | None = None, **annotations: bool) -> mcp_types.Tool:
    return mcp_types.Tool(
        name=name,
        description=description,
        input_schema={"type": "object", "properties": properties or {}},
        annotations=mcp_types.ToolAnnotations(**annotations) if annotations else None,
    )


def test_only_read_only_looking_tools_are_suggested() -> None:
    assert looks_read_only(tool("list_items", "List the items."))
    assert looks_read_only(tool("getUser", "Get a user by id.", {"userId": {"type": "string"}}))
    assert looks_read_only(tool("describe_table", "The columns of a table."))
    for refused in (
        tool("run_command", "Run a shell command."),
        tool("delete_item", "Delete an item."),
        tool("query", "Query the database.", {"sql": {"type": "string"}}),
        tool("get_and_update", "Get an item."),
        tool("search_issues", "Search issues, and create one when none matches."),
        tool("list_jobs", "List jobs.", {"command": {"type": "string"}}),
        tool("show_report", "Show the report, then email it to the team."),
        tool("list_files", "List files.", destructiveHint=True),
        tool("weather", "Today's weather."),  # no read verb: missed, never guessed
    ):
        assert looks_read_only(refused) is None, refused.name


def test_names_are_repeatable_and_comma_separated() -> None:
    assert parse_tool_names(["a,b", " c ", "a", ""]) == ["a", "b", "c"]


def test_check_suggests_the_read_only_looking_tools_and_the_exact_command(calls: Path) -> None:
    code, out = check("--command", COMMAND, "--layer", "protocol")
    assert code == 0, out
    assert called(calls) == set()  # nothing is called without the author's decision
    lines = out.splitlines()
    start = lines.index("Tools that look read-only but are not annotated so (none of them was called):")
    suggested = [line.split(":")[0].strip() for line in lines[start + 1 : start + 5]]
    assert suggested == LOOKS_READ_ONLY
    tail = "\n".join(lines[start:])
    for never in ("delete_item", "run_command", "purge_items"):
        assert never not in tail
    command = next(line.strip().strip("`") for line in lines[start:] if "--trust-read-only" in line)
    assert command.endswith(
        f"check --command {shlex.quote(COMMAND)} --trust-read-only {','.join(LOOKS_READ_ONLY)}"
    )
    assert shlex.split(command)[0].endswith("mcpipechekr")
    assert lines[-2:] == ["  check:", f"    read_only: [{', '.join(LOOKS_READ_ONLY)}]"]


def test_trusted_tools_are_called_and_no_other(calls: Path) -> None:
    code, out = check(
        "--command",
        COMMAND,
        "--trust-read-only",
        "list_items,get_item",
        "--trust-read-only",
        "search_items",
        "--format",
        "json",
    )
    assert code == 0, out
    assert called(calls) == {"list_items", "get_item", "search_items"}
    report = CheckReport.model_validate_json(out)
    assert [(t.tool, t.by, t.recorded) for t in report.trusted_read_only] == [
        ("list_items", "--trust-read-only", False),
        ("get_item", "--trust-read-only", False),
        ("search_items", "--trust-read-only", False),
    ]
    status = {result.id: result.status for result in report.checks}
    assert status["PC-10:list_items"] == status["PC-10:get_item"] == "PASS"
    assert status["PC-10:delete_item"] == status["PC-10:run_command"] == "SKIP"
    assert [candidate.tool for candidate in report.read_only_candidates] == ["query_items"]


def test_a_tool_the_server_does_not_list_is_an_error(calls: Path) -> None:
    code, out = check("--command", COMMAND, "--trust-read-only", "list_items,lst_items")
    assert code == 2
    assert "--trust-read-only names tool(s) the server does not list: lst_items (tools: delete_item, " in out
    assert called(calls) == set()


def test_annotations_that_say_destructive_win_over_trust(calls: Path, tmp_path: Path) -> None:
    junit = tmp_path / "check.xml"
    code, out = check(
        "--command",
        COMMAND,
        "--layer",
        "protocol",
        "--trust-read-only",
        "purge_items,list_items",
        "--format",
        "junit",
        "--output",
        str(junit),
    )
    assert code == 0, out
    assert called(calls) == {"list_items"}
    assert "  list_items: trusted by --trust-read-only" in out
    assert (
        "  not trusted: purge_items (--trust-read-only): it is annotated destructiveHint: true: "
        "annotations that say a tool writes win over trust"
    ) in out
    properties = {prop.get("name"): prop.get("value") for prop in ET.parse(junit).getroot().iter("property")}
    assert properties["trusted-read-only:list_items"] == "--trust-read-only"
    assert properties["refused-trust:purge_items"].startswith(
        "--trust-read-only: it is annotated destructive"
    )


def test_trust_is_recorded_in_config_yaml_and_honoured_without_the_flag(calls: Path, tmp_path: Path) -> None:
    config = write_config(Path.cwd())
    code, out = check(
        "--layer", "protocol", "--trust-read-only", "list_items", "--trust-read-only", "get_item"
    )
    assert code == 0, out
    assert "  list_items: trusted by --trust-read-only (recorded in config.yaml check.read_only)" in out
    text = config.read_text(encoding="utf-8")
    assert "# The catalog under test.\n" in text and "  call_timeout_s: 20  # per call\n" in text
    assert yaml.safe_load(text)["check"] == {"read_only": ["list_items", "get_item"], "call_timeout_s": 20}

    calls.unlink()
    code, out = check("--layer", "protocol", "--format", "json")
    assert code == 0, out
    assert called(calls) == {"list_items", "get_item"}
    report = CheckReport.model_validate_json(out)
    assert [(t.tool, t.by) for t in report.trusted_read_only] == [
        ("list_items", "config.yaml check.read_only"),
        ("get_item", "config.yaml check.read_only"),
    ]

    # Another server named by a flag does not inherit the project's trust.
    calls.unlink()
    code, out = check("--command", COMMAND, "--layer", "protocol")
    assert code == 0, out
    assert called(calls) == set()
    assert yaml.safe_load(config.read_text(encoding="utf-8"))["check"]["read_only"] == [
        "list_items",
        "get_item",
    ]


def test_baseline_honours_check_read_only(calls: Path, tmp_path: Path) -> None:
    config = write_config(Path.cwd())
    with config.open("a", encoding="utf-8") as out:
        out.write("paths:\n  tasks: tasks.yaml\n  runs: runs\n  home: home\n")
    (Path.cwd() / "tasks.yaml").write_text(
        "tasks:\n"
        "  - task_id: count-items\n"
        "    prompt: How many items are in the catalog?\n"
        "    task_type: deterministic\n"
        "    reference_calls:\n"
        "      - tool: list_items\n"
        "        arguments: {}\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(main, ["baseline"], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert "'list_items' may change state" in result.output
    assert called(calls) == set()

    text = config.read_text(encoding="utf-8").replace("check:\n", "check:\n  read_only: [list_items]\n")
    config.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(main, ["baseline"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "baselined  count-items: reference_calls" in result.output
    assert called(calls) == {"list_items"}


def test_init_asks_which_candidates_to_trust_and_records_them(calls: Path, tmp_path: Path) -> None:
    from mcpipechekr.cli.init_cmd import offer_read_only_trust

    config = write_config(Path.cwd())
    answers = iter(["e", "y", "n", "yes", ""])
    asked: list[str] = []

    def ask(question: str) -> str:
        asked.append(question)
        return next(answers)

    assert offer_read_only_trust(config, ask=ask) == ["list_items", "search_items"]
    assert asked[0] == "Do they only read? Trust all [a], ask for each [e], or none [N]: "
    assert asked[1:] == [f"Trust {name} as read-only? [y/N]: " for name in LOOKS_READ_ONLY]
    assert yaml.safe_load(config.read_text(encoding="utf-8"))["check"]["read_only"] == [
        "list_items",
        "search_items",
    ]
    assert called(calls) == set()  # listing the tools calls none of them
    assert offer_read_only_trust(config, ask=lambda _: "") == []  # the default is no


def test_init_off_a_terminal_asks_nothing(calls: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["init", "--command", COMMAND, "--dir", str(tmp_path / "p")])
    assert result.exit_code == 0, result.output
    assert "Do they only read?" not in result.output
    assert "read_only" not in yaml.safe_load((tmp_path / "p" / "config.yaml").read_text()).get("check", {})


def test_init_at_a_real_terminal_asks_and_records_the_answer(calls: Path, tmp_path: Path) -> None:
    """The question reaches a person on a pseudo-terminal; answering `a` trusts every candidate."""
    project = tmp_path / "at-terminal"
    code, shown = at_terminal(
        ["init", "--command", COMMAND, "--dir", str(project)],
        answer="a",
        prompt=b"or none [N]: ",
        env={"CATALOG_CALLS": str(calls)},
    )
    assert code == 0, shown
    assert all(name in shown for name in LOOKS_READ_ONLY) and "delete_item" not in shown.split("[N]")[0]
    recorded = yaml.safe_load((project / "config.yaml").read_text(encoding="utf-8"))["check"]["read_only"]
    assert recorded == LOOKS_READ_ONLY
    assert called(calls) == set()  # asking calls none of them
