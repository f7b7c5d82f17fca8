"""`mcpipechekr serve` as a real MCP server over stdio, bound to a project, driven by the MCP SDK's client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
import yaml
from findings_sessions import LOOKUP, SECRET, SERVER, promoted_lookup_finding, register_lookup
from mcp import Client, StdioServerParameters

from mcpipechekr.check.pointer import result_text
from mcpipechekr.findings.home import HOME_ENV, Home
from mcpipechekr.findings.lifecycle.states import current_state, record_verification
from mcpipechekr.findings.server_identity import ServerKey
from mcpipechekr.findings.views.serve import serve_argv, serve_env


def project_config(folder: Path, *, broken: bool = False) -> Path:
    """A project's config.yaml whose server is the findings test server (broken: FINDINGS_BROKEN=1)."""
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "config.yaml"
    server: dict[str, object] = {"name": "findings", "command": "python", "args": [str(SERVER)]}
    if broken:
        server["env"] = {"FINDINGS_BROKEN": "1"}
    config.write_text(yaml.safe_dump({"server": server}), encoding="utf-8")
    return config


def serve_params(config: Path, home: Home, cwd: Path) -> StdioServerParameters:
    """`serve` as another program's MCP configuration starts it: `serve_argv` and `serve_env`."""
    argv = serve_argv(config)
    env = {**os.environ, **serve_env(home)}
    return StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=str(cwd))


def test_serve_argv_names_this_interpreter_and_the_config_absolutely(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project_config(tmp_path / "project")
    monkeypatch.chdir(tmp_path)
    argv = serve_argv(Path("project/config.yaml"))
    config = str(tmp_path.resolve() / "project" / "config.yaml")
    assert argv == [sys.executable, "-m", "mcpipechekr", "serve", "--config", config]
    assert serve_env(Home(Path("somewhere"))) == {HOME_ENV: str((tmp_path / "somewhere").resolve())}


def test_without_a_config_serve_does_not_start(tmp_path: Path) -> None:
    done = subprocess.run(
        serve_argv(tmp_path / "missing.yaml"),
        cwd=tmp_path,
        env={**os.environ, HOME_ENV: str(tmp_path / "home")},
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert done.returncode == 2
    assert "missing.yaml" in done.stderr and "config file not found" in done.stderr


def test_the_tools_and_their_annotations_say_what_they_do(home: Home, tmp_path: Path) -> None:
    config = project_config(tmp_path / "project")
    tools = {}

    async def session() -> None:
        async with Client(serve_params(config, home, tmp_path)) as client:
            tools.update({tool.name: tool for tool in (await client.list_tools()).tools})

    anyio.run(session)
    assert set(tools) == {"list_findings", "get_finding", "generate_case", "verify_fix"}
    hints = {
        name: (
            tool.annotations.read_only_hint,
            tool.annotations.destructive_hint,
            tool.annotations.idempotent_hint,
            tool.annotations.open_world_hint,
        )
        for name, tool in tools.items()
        if tool.annotations is not None
    }
    assert hints == {
        "list_findings": (True, False, True, False),
        "get_finding": (True, False, True, False),
        "generate_case": (False, False, True, False),
        "verify_fix": (False, True, False, True),
    }
    properties = {name: set(tool.input_schema["properties"]) for name, tool in tools.items()}
    assert properties == {
        "list_findings": {"state"},
        "get_finding": {"finding_id"},
        "generate_case": {"finding_id", "confirm_read_only", "arguments", "expect"},
        "verify_fix": {"finding_id", "case"},
    }


def test_without_an_index_the_listing_tools_answer_evidence_unavailable(home: Home, tmp_path: Path) -> None:
    config = project_config(tmp_path / "project")

    async def session() -> None:
        async with Client(serve_params(config, home, tmp_path)) as client:
            for name, args in (
                ("list_findings", {}),
                ("get_finding", {"finding_id": "finding-0000000000000000"}),
            ):
                result = await client.call_tool(name, args)
                assert result.is_error
                assert f"evidence unavailable: {home.index_db}: no index yet" in result_text(result)

    anyio.run(session)


@pytest.mark.subprocess_clock  # findings recorded by `mcpipechekr capture`, promoted here
def test_an_agent_lists_generates_and_checks_its_own_fix(home: Home, tmp_path: Path) -> None:
    finding_id = promoted_lookup_finding(home)
    config = project_config(tmp_path / "project")
    case_file = home.root / "cases" / f"{finding_id}.yaml"
    answers: list[str] = []

    async def session() -> None:
        async with Client(serve_params(config, home, tmp_path)) as client:
            listed = await client.call_tool("list_findings", {"state": "open"})
            assert not listed.is_error
            (finding,) = json.loads(result_text(listed))["findings"]
            assert finding["id"] == finding_id and finding["tool"] == "lookup"
            assert finding["arg_shapes"] == [{"key": "string"}]
            got = await client.call_tool("get_finding", {"finding_id": finding_id})
            assert json.loads(result_text(got))["findings"] == [finding]
            missing = await client.call_tool("get_finding", {"finding_id": "finding-ffffffffffffffff"})
            assert missing.is_error and "no finding finding-ffffffffffffffff" in result_text(missing)

            unconfirmed = await client.call_tool(
                "generate_case", {"finding_id": finding_id, "confirm_read_only": False}
            )
            assert unconfirmed.is_error and "pass --confirm-read-only" in result_text(unconfirmed)
            unfilled = await client.call_tool(
                "generate_case", {"finding_id": finding_id, "confirm_read_only": True}
            )
            assert json.loads(result_text(unfilled))["case"] == finding_id
            refused = await client.call_tool("verify_fix", {"finding_id": finding_id})
            assert refused.is_error and "still the placeholder '<fill: string>'" in result_text(refused)

            generated = await client.call_tool(
                "generate_case",
                {"finding_id": finding_id, "confirm_read_only": True, "arguments": {"key": "k1"}},
            )
            assert not generated.is_error, result_text(generated)
            assert generated.structured_content == {"case": finding_id, "manifest": case_file.read_text()}
            assert "    key: k1\n" in case_file.read_text()
            again = await client.call_tool(
                "generate_case",
                {"finding_id": finding_id, "confirm_read_only": True, "arguments": {"key": "k1"}},
            )
            assert again.structured_content == generated.structured_content

            for _ in range(3):
                verified = await client.call_tool("verify_fix", {"finding_id": finding_id})
                assert not verified.is_error, result_text(verified)
                answers.append(result_text(verified))
            unknown_case = await client.call_tool("verify_fix", {"finding_id": finding_id, "case": "nope"})
            assert unknown_case.is_error and f"no case 'nope' (cases: {finding_id})" in result_text(
                unknown_case
            )
            still = await client.call_tool("list_findings", {"state": "open"})
            assert [item["id"] for item in json.loads(result_text(still))["findings"]] == [finding_id]
            answers.extend(result_text(result) for result in (listed, got, generated, still, refused))

    anyio.run(session)
    assert answers[0] == (
        f"{finding_id}: green (3 of 3 attempt(s) passed); advisory, not credited: still open, streak 0/3 "
        "(only `mcpipechekr verify` and the loop's runs move a finding)"
    )
    assert current_state(home, finding_id) == ("open", 0)
    assert all(SECRET not in answer for answer in answers)


def test_a_red_through_serve_shows_its_reason_and_hint_and_reopens_nothing(
    home: Home, tmp_path: Path
) -> None:
    register_lookup(home, hint="Catch the exception at the tool boundary.")
    for n in range(3):
        record_verification(
            home,
            LOOKUP,
            run_id=f"run-{n}",
            passed=True,
            binding="b",
            probe="p",
            origin="loop",
            server=ServerKey("findings", "script:/elsewhere/findings_server.py"),
        )
    config = project_config(tmp_path / "project", broken=True)
    answers: list[str] = []

    async def session() -> None:
        async with Client(serve_params(config, home, tmp_path)) as client:
            await client.call_tool(
                "generate_case", {"finding_id": LOOKUP, "confirm_read_only": True, "arguments": {"key": "k1"}}
            )
            result = await client.call_tool("verify_fix", {"finding_id": LOOKUP})
            assert not result.is_error
            answers.append(result_text(result))

    anyio.run(session)
    head, hint, *failures = answers[0].splitlines()
    assert head == (
        f"{LOOKUP}: red (attempt 1 of 3 failed); advisory, not credited: still closed, streak 3/3 "
        "(only `mcpipechekr verify` and the loop's runs move a finding) reason=error-returned"
    )
    assert hint == "  hint: Catch the exception at the tool boundary."
    assert failures and "KeyError: 'k1'" in failures[0]
    assert current_state(home, LOOKUP) == ("closed", 3)
