"""Argument synthesis in `check` (PC-10, PC-11, QC-01 and the coverage section) against a real server.

tests/servers/depot_server.py has one read-only tool per way of finding an
argument (another tool's result, the server's command line, an enum, a format,
a pattern, an example, a resource), one that refuses everything, one that
crashes only on a real id, and an open-world one whose host is a closed
127.0.0.1 port. The server is checked once per module and the tests read the
same report; a second run with `check.synthesize: false` shows what synthesis
adds.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path

import mcp_types
import pytest
import yaml
from click.testing import CliRunner

from mcpipechekr.artifacts.check_report import CheckReport, CheckResult, Coverage
from mcpipechekr.check.answers import NEEDS_NETWORK
from mcpipechekr.check.candidates import candidates
from mcpipechekr.check.hints import generate_matching
from mcpipechekr.check.orchestrate import run_check
from mcpipechekr.check.report import render
from mcpipechekr.check.sources import ValuePool, harvest_result, server_values
from mcpipechekr.cli import main
from mcpipechekr.config import MASK, Config, ServerConfig

pytestmark = pytest.mark.xdist_group("test_check_synthesis")

SERVERS = Path(__file__).resolve().parent / "servers"
FED = [
    "get_shelf",
    "get_item",
    "get_order",
    "read_file",
    "convert",
    "events_on",
    "lookup_sku",
    "lookup_code",
    "read_doc",
]


def closed_port() -> int:
    """A 127.0.0.1 port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def depot_config(root: Path, **check: object) -> Config:
    server = ServerConfig(
        name="depot",
        command=sys.executable,
        args=[str(SERVERS / "depot_server.py"), "--root", str(root), "--closed-port", str(closed_port())],
    )
    return Config.model_validate({"server": server.model_dump(), "check": check})


def depot_root(folder: Path) -> Path:
    root = folder / "depot"
    root.mkdir()
    (root / "manifest.txt").write_text("12 lamps, 3 desks\n", encoding="utf-8")
    return root


def by_id(report: CheckReport) -> dict[str, CheckResult]:
    ids = [result.id for result in report.checks]
    assert len(ids) == len(set(ids)), f"duplicate check ids: {ids}"
    return {result.id: result for result in report.checks}


@pytest.fixture(scope="module")
def depot(tmp_path_factory: pytest.TempPathFactory) -> tuple[CheckReport, Path]:
    folder = tmp_path_factory.mktemp("depot")
    root = depot_root(folder)
    report = run_check(
        depot_config(root, synthesis_time_s=1),
        layers=["protocol", "quality"],
        call_timeout_s=10,
        log_path=folder / "log",
    )
    return report, root


def test_each_tool_is_reached_with_the_argument_only_its_source_gives(depot) -> None:
    report, root = depot
    checks = by_id(report)
    for tool in ["list_items", "list_orders", *FED]:
        assert checks[f"PC-10:{tool}"].status == "PASS", checks[f"PC-10:{tool}"]
    arguments = {tool: checks[f"PC-10:{tool}"].details["arguments"] for tool in FED}
    sources = {tool: checks[f"PC-10:{tool}"].details["sources"] for tool in FED}
    # a list → get chain: the id came from structuredContent, the order number from JSON text
    assert arguments["get_item"]["item_id"] in {"it-7", "it-9"}
    assert sources["get_item"] == {"item_id": "result of list_items"}
    # a tool listed before the one that feeds it is tried again once that one has answered
    assert (arguments["get_shelf"], sources["get_shelf"]) == (
        {"shelf_id": "s-3"},
        {"shelf_id": "result of get_item"},
    )
    shelf_attempts = checks["PC-10:get_shelf"].details["attempts"]
    assert [attempt["outcome"] for attempt in shelf_attempts][-2:] == ["refused", "reached"]
    assert (arguments["get_order"], sources["get_order"]) == (
        {"order_id": 31},
        {"order_id": "result of list_orders"},
    )
    # a path inside the directory the server was started with
    assert arguments["read_file"] == {"path": str((root / "manifest.txt").resolve())}
    assert sources["read_file"]["path"].startswith("server command line")
    assert (arguments["convert"], sources["convert"]) == ({"unit": "inch"}, {"unit": "schema enum"})
    assert sources["events_on"] == {"day": "schema format"}
    assert sources["lookup_sku"] == {"sku": "schema pattern"}
    assert (arguments["lookup_code"], sources["lookup_code"]) == (
        {"code": "ZX-42"},
        {"code": "schema example"},
    )
    assert (arguments["read_doc"], sources["read_doc"]) == (
        {"uri": "depot://docs/returns-policy"},
        {"uri": "resource"},
    )
    # the reason says what succeeded, and how many calls it took when more than one
    assert "with item_id from the result of list_items" in checks["PC-10:get_item"].reason
    assert "with unit from the schema enum (call 3 of 3)" in checks["PC-10:convert"].reason


def test_a_tool_that_refuses_everything_is_not_reached_not_a_warning(depot) -> None:
    report, _ = depot
    checks = by_id(report)
    refused = checks["PC-10:search_archive"]
    assert refused.status == "SKIP"
    assert refused.reason.startswith(
        "not reached: Error executing tool search_archive: the archive is offline for maintenance (after "
    )
    # the same message whatever the arguments, three times in a row: more arguments will not help
    assert len(refused.details["attempts"]) == 3
    assert {attempt["outcome"] for attempt in refused.details["attempts"]} == {"refused"}
    assert [r.id for r in report.checks if r.status == "WARN" and r.id.startswith("PC-10")] == []
    entry = next(entry for entry in report.coverage.tools if entry.tool == "search_archive")
    assert entry.status == "not_reached"
    assert entry.error == "Error executing tool search_archive: the archive is offline for maintenance"


def test_a_slow_tool_gets_no_new_call_past_its_time_box(depot) -> None:
    report, _ = depot
    slow = by_id(report)["PC-10:slow_lookup"]
    assert slow.status == "SKIP" and slow.reason.startswith("not reached: ")
    # each refusal takes 0.4 s and quotes its value: only the 1 s time box stops the six enum values
    assert 1 <= len(slow.details["attempts"]) <= 3


def test_a_crash_only_synthesized_input_reaches_is_a_failure(depot) -> None:
    report, _ = depot
    crash = by_id(report)["PC-10:inspect_item"]
    assert crash.status == "FAIL"
    assert crash.reason.startswith("looks like an unhandled exception: Error executing tool inspect_item")
    assert "with item_id from the result of list_items" in crash.reason
    assert crash.details["arguments"]["item_id"] in {"it-7", "it-9"}
    assert report.exit_code == 1
    entry = next(entry for entry in report.coverage.tools if entry.tool == "inspect_item")
    assert entry.status == "failed"


def test_an_open_world_tool_without_its_network_is_skipped(depot) -> None:
    report, _ = depot
    status = by_id(report)["PC-10:upstream_status"]
    assert status.status == "SKIP"
    assert status.reason.startswith(
        "needs network: Error executing tool upstream_status: cannot reach the supplier"
    )
    assert "Connection refused" in status.reason
    assert len(status.details["attempts"]) == 1  # no point trying other arguments without a network
    entry = next(entry for entry in report.coverage.tools if entry.tool == "upstream_status")
    assert entry.status == "needs_network"


def test_coverage_figure_and_per_tool_lines_of_pc11_and_qc01(depot) -> None:
    report, _ = depot
    checks = by_id(report)
    coverage = report.coverage
    assert coverage is not None
    assert (coverage.reached, coverage.callable_tools) == (11, 15)
    assert [entry.tool for entry in coverage.tools][:3] == [
        "list_items",
        "get_shelf",
        "get_item",
    ]  # listed order
    assert {entry.tool for entry in coverage.tools if entry.status != "reached"} == {
        "search_archive",
        "slow_lookup",
        "inspect_item",
        "upstream_status",
    }
    reached = next(entry for entry in coverage.tools if entry.tool == "get_order")
    assert (reached.arguments, reached.sources, reached.error) == (
        {"order_id": 31},
        {"order_id": "result of list_orders"},
        None,
    )
    # PC-11: validated on each success (the SDK declares an outputSchema for every tool here), and a
    # SKIP line with the reason for each tool not reached
    for tool in ["list_items", "list_orders", *FED]:
        assert checks[f"PC-11:{tool}"].status == "PASS"
    assert (checks["PC-11:search_archive"].status, checks["PC-11:search_archive"].reason) == (
        "SKIP",
        "not reached (see PC-10)",
    )
    assert checks["PC-11:inspect_item"].reason == "no successful result (PC-10 failed)"
    assert checks["PC-11:upstream_status"].reason == "not reached: it needs network"
    # QC-01: only successful answers are sized; every tool has a line
    for tool in ["list_items", "list_orders", *FED]:
        assert checks[f"QC-01:{tool}"].status == "PASS"
    assert checks["QC-01:search_archive"].status == "SKIP"
    assert checks["QC-01:search_archive"].reason == (
        "not reached: Error executing tool search_archive: the archive is offline for maintenance"
    )
    assert checks["QC-01:inspect_item"].reason.startswith("no successful response (PC-10 failed: ")
    assert checks["QC-01:upstream_status"].reason.startswith("needs network: ")
    assert {size.tool for size in report.sizes} == {"list_items", "list_orders", *FED}


def test_the_text_report_has_a_coverage_section(depot) -> None:
    report, _ = depot
    text = render(report, "text").splitlines()
    start = text.index("Coverage")
    assert text[start + 1].startswith("  11/15 callable tools reached")
    assert text[start + 2 : start + 6] == [
        "  not reached: search_archive (Error executing tool search_archive: the archive is offline for "
        "maintenance)",
        text[start + 3],
        "  failed: inspect_item (looks like an unhandled exception: Error executing tool inspect_item)",
        text[start + 5],
    ]
    assert text[start + 3].startswith(
        "  not reached: slow_lookup (Error executing tool slow_lookup: no stock"
    )
    assert text[start + 5].startswith(
        "  needs network: upstream_status (Error executing tool upstream_status: cannot reach the supplier"
    )
    assert "Connection refused" in text[start + 5]
    assert text[-1].startswith("Summary: ")


def test_the_text_report_says_so_when_no_tool_may_be_called(depot) -> None:
    report, _ = depot
    nothing = report.model_copy(update={"coverage": Coverage(callable_tools=0, reached=0)})
    text = render(nothing, "text").splitlines()
    assert text[text.index("Coverage") + 1] == (
        "  no tool may be called: none is annotated read-only, trusted as read-only or opted in (see PC-10)"
    )
    assert "Coverage" not in render(report.model_copy(update={"coverage": None}), "text").splitlines()


def test_the_quality_layer_alone_synthesizes_as_pc10_does(tmp_path: Path) -> None:
    root = depot_root(tmp_path)
    config = depot_config(root, synthesis_time_s=1)
    report = run_check(config, layers=["quality"], call_timeout_s=10, log_path=tmp_path / "log")
    checks = by_id(report)
    assert {r.layer for r in report.checks} == {"quality"}
    # the resources were listed for synthesis although PC-07 did not run
    assert checks["QC-01:read_doc"].status == "PASS"
    assert checks["QC-01:get_shelf"].status == "PASS"
    assert checks["QC-01:search_archive"].reason.startswith("not reached: ")
    assert report.coverage is not None and (report.coverage.reached, report.coverage.callable_tools) == (
        11,
        15,
    )
    assert report.exit_code == 0  # sizes are the quality layer's business; the crash is PC-10's


def test_the_cli_json_report_carries_coverage_and_synthesis_can_be_turned_off(tmp_path: Path) -> None:
    root = depot_root(tmp_path)
    config = depot_config(root, synthesize=False)
    config_path = tmp_path / "config.yaml"
    config_path.write_text(
        yaml.safe_dump(
            {"server": config.server.model_dump(exclude_defaults=True), "check": {"synthesize": False}}
        ),
        encoding="utf-8",
    )
    result = CliRunner().invoke(
        main,
        ["check", "--config", str(config_path), "--layer", "protocol", "--format", "json"],
        catch_exceptions=False,
    )
    report = CheckReport.model_validate_json(result.output)
    checks = by_id(report)
    # one call with minimal arguments: what the schema alone gives is reached, nothing fed is
    for tool in ("list_items", "list_orders", "events_on", "lookup_code"):
        assert checks[f"PC-10:{tool}"].status == "PASS", checks[f"PC-10:{tool}"]
    for tool in ("get_shelf", "get_item", "get_order", "read_file", "convert", "read_doc", "inspect_item"):
        assert checks[f"PC-10:{tool}"].status == "SKIP", checks[f"PC-10:{tool}"]
        assert checks[f"PC-10:{tool}"].reason.startswith("not reached: ")
        assert len(checks[f"PC-10:{tool}"].details["attempts"]) == 1
    assert checks["PC-10:lookup_sku"].reason.startswith("cannot generate arguments")  # a pattern
    assert report.coverage is not None and report.coverage.reached == 4
    assert report.exit_code == 0  # the crash behind inspect_item's real ids is not reached


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        [
            "git",
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.com",
            "-c",
            "commit.gpgsign=false",
            *args,
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return done.stdout.strip()


def test_a_git_server_is_reached_through_its_repository_and_its_log(tmp_path: Path) -> None:
    repo = tmp_path / "shop"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "README.md").write_text("shop\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "first stock list")
    head = git(repo, "rev-parse", "HEAD")
    server = ServerConfig(
        name="gitlog",
        command=sys.executable,
        args=[str(SERVERS / "gitlog_server.py"), "--repository", str(repo)],
        env={"GITLOG_TZ": "Pacific/Chatham"},
    )
    report = run_check(
        Config(server=server), layers=["protocol"], call_timeout_s=10, log_path=tmp_path / "log"
    )
    checks = by_id(report)
    log, show, hours = (checks[f"PC-10:{tool}"] for tool in ("git_log", "git_show", "office_hours"))
    assert (log.status, log.details["arguments"]) == ("PASS", {"repo_path": str(repo.resolve())})
    assert log.details["sources"] == {"repo_path": "server command line"}
    # the log's `commit: <sha>` line feeds the revision
    assert show.status == "PASS", show
    assert show.details["arguments"] == {"repo_path": str(repo.resolve()), "revision": head}
    assert show.details["sources"]["revision"] == "result of git_log"
    # a time zone from the server's environment: used, and masked in the report like every env value
    assert hours.status == "PASS", hours
    assert hours.details["sources"] == {"timezone": "server environment"}
    assert hours.details["arguments"] == {"timezone": MASK}
    assert report.coverage is not None and (report.coverage.reached, report.coverage.callable_tools) == (3, 3)
    assert "Pacific/Chatham" not in report.model_dump_json()


# --- the parts, without a server ----------------------------------------------------------------------


def test_a_string_is_generated_for_simple_patterns() -> None:
    for pattern in (r"^[A-Z]{2}-\d{3}$", r"^v\d+\.\d+$", r"^(draft|final)-[a-z0-9_]+$", r"\w+@\w+\.com"):
        generated = generate_matching(pattern)
        assert generated is not None, pattern
        assert re.search(pattern, generated), (pattern, generated)


def test_values_from_the_command_line_are_existing_paths_and_time_zones_never_other_env_values(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("hi", encoding="utf-8")
    server = ServerConfig(
        name="x",
        command="python",
        args=[
            "-m",
            "srv",
            "--repository",
            str(repo),
            "--local-timezone=Europe/Paris",
            str(tmp_path / "missing"),
        ],
        env={"API_TOKEN": "sk-secret-value-123", "HOME_DIR": str(repo)},
    )
    pool = server_values(server)
    assert [found.value for found in pool.directories] == [str(repo.resolve())]
    assert [found.value for found in pool.files] == [str((repo / "README.md").resolve())]
    assert [found.value for found in pool.time_zones] == ["Europe/Paris"]
    everything = [f.value for kind in (pool.directories, pool.files, pool.time_zones) for f in kind]
    assert "sk-secret-value-123" not in everything
    # the server's own program is no argument for its tools
    script = tmp_path / "server.py"
    script.write_text("", encoding="utf-8")
    launched = server_values(ServerConfig(name="y", command="python", args=[str(script), str(repo)]))
    assert str(script.resolve()) not in [found.value for found in launched.files]
    assert [found.value for found in launched.directories] == [str(repo.resolve())]


def test_a_result_feeds_a_parameter_with_a_matching_name() -> None:
    pool = ValuePool()
    listing = mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text="{}")],
        structured_content={"users": [{"id": "u-1", "name": "Ada"}, {"id": "u-2", "name": "Bo"}]},
    )
    pool.add_result("list_users", listing)
    assert ("u-1", "id") in {(found.value, found.key) for found in harvest_result("list_users", listing)}
    tool = mcp_types.Tool(
        name="get_user",
        input_schema={
            "type": "object",
            "properties": {"userId": {"type": "string"}, "verbose": {"type": "boolean"}},
            "required": ["userId"],
        },
    )
    first, *rest = candidates(tool, pool, limit=8)
    assert (first.arguments, first.sources) == ({"userId": "u-1"}, {"userId": "result of list_users"})
    assert {"userId": "u-2"} in [candidate.arguments for candidate in rest]
    assert len(rest) < 8


def test_an_odd_schema_costs_its_synthesized_sets_not_the_check() -> None:
    tool = mcp_types.Tool(
        name="odd",
        input_schema={
            "type": "object",
            "properties": {
                "count": {"type": "integer", "minimum": 2, "exclusiveMinimum": True},
                "label": {"type": "string", "minLength": "three"},
            },
            "required": ["count"],
        },
    )
    offered = candidates(tool, ValuePool(), limit=8)
    assert offered[0].arguments == {"count": 2}
    assert offered[0].sources == {"count": "schema bounds"}  # synthesized, not only the minimal fallback
    assert all(isinstance(candidate.arguments["count"], int) for candidate in offered)


@pytest.mark.parametrize(
    "text",
    [
        "cannot reach api.example.com: [Errno -2] Name or service not known",
        "getaddrinfo ENOTFOUND registry.npmjs.org",
        "Failed to fetch https://example.com/: ConnectError('[Errno 101] Network is unreachable')",
        "request to https://api.github.com failed, reason: connect ECONNREFUSED 127.0.0.1:443",
        "HTTPSConnectionPool(host='x', port=443): Read timed out. (read timeout=10)",
        "[Errno -3] Temporary failure in name resolution",
    ],
)
def test_errors_that_say_the_network_is_missing(text: str) -> None:
    assert NEEDS_NETWORK.search(text)


@pytest.mark.parametrize(
    "text", ["unknown item id 'a'", "access denied: a is outside the allowed directory", "no such repository"]
)
def test_ordinary_refusals_are_not_network_errors(text: str) -> None:
    assert not NEEDS_NETWORK.search(text)
