"""`mcpipechekr serve` as a real MCP server over stdio, driven by the MCP SDK's client."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from findings_sessions import SECRET, SERVER, promoted_lookup_finding
from mcp import Client, StdioServerParameters

from mcpipechekr.check.pointer import result_text
from mcpipechekr.findings.home import HOME_ENV, Home
from mcpipechekr.findings.lifecycle.states import current_state

SERVE = "from mcpipechekr.cli.serve_cmd import serve_command; serve_command()"


def serve_params(home: Home, cwd: Path) -> StdioServerParameters:
    env = {**os.environ, HOME_ENV: str(home.root)}
    return StdioServerParameters(command=sys.executable, args=["-c", SERVE], env=env, cwd=str(cwd))


def test_without_an_index_the_listing_tools_answer_evidence_unavailable(home: Home, tmp_path: Path) -> None:
    async def session() -> None:
        async with Client(serve_params(home, tmp_path)) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert names == {"list_findings", "get_finding", "generate_case", "verify_fix"}
            for name, args in (
                ("list_findings", {}),
                ("get_finding", {"finding_id": "finding-0000000000000000"}),
            ):
                result = await client.call_tool(name, args)
                assert result.is_error
                assert f"evidence unavailable: {home.index_db}: no index yet" in result_text(result)

    anyio.run(session)


@pytest.mark.subprocess_clock  # findings recorded by `mcpipechekr capture`, promoted here
def test_an_agent_lists_generates_and_verifies_its_own_fix(home: Home, tmp_path: Path) -> None:
    finding_id = promoted_lookup_finding(home)
    manifest = tmp_path / "case.yaml"
    answers: list[str] = []

    async def session() -> None:
        async with Client(serve_params(home, tmp_path)) as client:
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
                "generate_case",
                {"finding_id": finding_id, "output": str(manifest), "confirm_read_only": False},
            )
            assert unconfirmed.is_error and "pass --confirm-read-only" in result_text(unconfirmed)
            generated = await client.call_tool(
                "generate_case",
                {"finding_id": finding_id, "output": str(manifest), "confirm_read_only": True},
            )
            assert not generated.is_error and result_text(generated) == manifest.read_text()
            manifest.write_text(manifest.read_text().replace("'<fill: string>'", "k1"))

            both = await client.call_tool(
                "verify_fix",
                {
                    "finding_id": finding_id,
                    "case": finding_id,
                    "manifest": str(manifest),
                    "url": "http://x/",
                    "command": ["x"],
                },
            )
            assert both.is_error and "give the server once" in result_text(both)
            for _ in range(3):
                verified = await client.call_tool(
                    "verify_fix",
                    {
                        "finding_id": finding_id,
                        "case": finding_id,
                        "manifest": str(manifest),
                        "command": [sys.executable, str(SERVER)],
                    },
                )
                assert not verified.is_error, result_text(verified)
                answers.append(result_text(verified))
            closed = await client.call_tool("list_findings", {"state": "closed"})
            assert json.loads(result_text(closed))["findings"] == []
            answers.extend(result_text(result) for result in (listed, got, generated, closed))

    anyio.run(session)
    advisory = f"{finding_id}: green (3 of 3 attempt(s) passed); advisory, not credited: still open"
    assert all(answer.startswith(advisory) for answer in answers[:3])
    assert current_state(home, finding_id) == ("open", 0)
    assert all(SECRET not in answer for answer in answers)
