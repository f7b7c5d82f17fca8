"""The streamable HTTP checks (PC-70…PC-79) against real servers on 127.0.0.1.

The MCP SDK's server, as it ships (sessions, SSE, DNS-rebinding protection),
passes every one; stateless it skips the session checks and passes the rest;
without its Origin check it fails PC-74 alone. tests/servers/lax_http_server.py
ignores every rule of the transport and is caught on each. Every server is
started by `run_check` from a `start` command on a free port and stopped by it.
"""

from __future__ import annotations

import json
import socket
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import httpx2
import pytest

from mcpipechekr.artifacts.check_report import CheckReport, CheckResult
from mcpipechekr.check.orchestrate import run_check
from mcpipechekr.check.protocol import CHECKS
from mcpipechekr.check.report import to_json, to_junit
from mcpipechekr.check.spec_http import HTTP_CHECK_NAMES, HTTP_GROUP, Wire, own_origin
from mcpipechekr.config import Config, LaunchSpec, ServerConfig

SERVERS = Path(__file__).resolve().parent / "servers"
HTTP_IDS = list(HTTP_CHECK_NAMES)
SECRET = "Bearer lax-secret-7f3a91"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def check_http(
    tmp_path: Path, script: str, *flags: str, headers: dict[str, str] | None = None, path: str = "/mcp"
) -> CheckReport:
    port = free_port()
    server = ServerConfig(
        name=Path(script).stem,
        url=f"http://127.0.0.1:{port}{path}",
        headers=headers or {},
        start=LaunchSpec(command=sys.executable, args=[str(SERVERS / script), str(port), *flags]),
    )
    return run_check(Config(server=server), layers=["protocol"], log_path=tmp_path / "server.log")


def http_results(report: CheckReport) -> dict[str, CheckResult]:
    results = {result.id: result for result in report.checks if result.id in HTTP_CHECK_NAMES}
    assert list(results) == HTTP_IDS  # each once, in run order
    assert all(result.group == HTTP_GROUP and result.layer == "protocol" for result in results.values())
    return results


def statuses(report: CheckReport) -> dict[str, str]:
    return {check_id: result.status for check_id, result in http_results(report).items()}


def test_the_checks_are_protocol_checks_with_ids_in_their_range() -> None:
    assert HTTP_IDS == [f"PC-{number}" for number in range(70, 80)]
    assert all(CHECKS[check_id].name == name for check_id, name in HTTP_CHECK_NAMES.items())


def test_the_sdk_server_as_shipped_passes_every_check(tmp_path: Path) -> None:
    report = check_http(tmp_path, "http_spec_server.py")
    results = http_results(report)
    assert statuses(report) == dict.fromkeys(HTTP_IDS, "PASS"), {k: r.reason for k, r in results.items()}
    assert results["PC-74"].reason == "a ping with Origin: http://dns-rebinding.example: refused with 403"
    assert results["PC-77"].details == {"status": 200}
    assert "refused with 404" in results["PC-79"].reason
    assert [result.id for result in report.checks if result.status == "FAIL"] == []


def test_a_stateless_json_server_skips_the_session_checks_and_passes_the_rest(tmp_path: Path) -> None:
    # reached through /mcp/, which the server redirects to /mcp: the checks follow, as clients do
    report = check_http(tmp_path, "http_spec_server.py", "--stateless", "--json", path="/mcp/")
    assert [r.id for r in report.checks if r.status == "FAIL"] == []  # the raw sessions follow it too
    results = http_results(report)
    skipped = {check_id for check_id, result in results.items() if result.status == "SKIP"}
    assert skipped == {"PC-70", "PC-71", "PC-72", "PC-79"}
    assert all("issued no Mcp-Session-Id" in results[check_id].reason for check_id in skipped)
    assert {result.status for result in results.values()} == {"PASS", "SKIP"}


def test_without_dns_rebinding_protection_only_the_origin_check_fails(tmp_path: Path) -> None:
    results = http_results(check_http(tmp_path, "http_spec_server.py", "--no-protection"))
    assert [check_id for check_id, result in results.items() if result.status != "PASS"] == ["PC-74"]
    assert results["PC-74"].status == "FAIL"
    assert "DNS rebinding" in results["PC-74"].reason


def test_a_lax_server_is_caught_on_every_rule_and_no_header_value_is_shown(tmp_path: Path) -> None:
    report = check_http(tmp_path, "lax_http_server.py", headers={"Authorization": SECRET})
    results = http_results(report)
    assert statuses(report) == {
        "PC-70": "FAIL",  # a space in its session id
        "PC-71": "WARN",  # answered without the session id
        "PC-72": "FAIL",  # answered an id it never issued
        "PC-73": "FAIL",  # answered an unsupported protocol version
        "PC-74": "FAIL",  # answered a foreign Origin
        "PC-75": "PASS",
        "PC-76": "WARN",  # answered Accept: text/plain
        "PC-77": "FAIL",  # GET answered with text/plain
        "PC-78": "FAIL",  # 200 and a body for a notification
        "PC-79": "FAIL",  # the session goes on after DELETE
    }
    assert "outside visible ASCII (0x21-0x7E) at 3 (0x20)" in results["PC-70"].reason
    assert "HTTP 200 (text/plain)" in results["PC-77"].reason
    assert "notifications/initialized: HTTP 200 (application/json): {}" in results["PC-78"].reason
    # the other protocol checks are untouched by the transport's defects; the one other FAIL is true:
    # it echoes whatever version initialize asks for (PC-30)
    others = [result.id for result in report.checks if result.status == "FAIL" and result.id not in results]
    assert others == ["PC-30"]

    # JSON and JUnit carry the ids; the configured header value, echoed by the server, is in neither
    as_json = to_json(report)
    assert {check["id"] for check in json.loads(as_json)["checks"]} >= set(HTTP_IDS)
    cases = {case.get("name"): case for case in ET.fromstring(to_junit(report)).iter("testcase")}
    assert all(any(name.startswith(check_id) for name in cases) for check_id in HTTP_IDS)
    for text in (as_json, to_junit(report), *(result.reason for result in results.values())):
        assert "lax-secret-7f3a91" not in text
    assert "nothing to stream for ***" in results["PC-77"].reason  # the header was sent, its value hidden


def test_a_stdio_server_skips_every_transport_check(tmp_path: Path) -> None:
    server = ServerConfig(name="tiny", command=sys.executable, args=[str(SERVERS / "tiny_server.py")])
    report = run_check(Config(server=server), layers=["protocol"], log_path=tmp_path / "server.log")
    results = http_results(report)
    assert {result.status for result in results.values()} == {"SKIP"}
    assert all(result.reason.startswith("a stdio server") for result in results.values())


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("http://127.0.0.1:8765/mcp", "http://127.0.0.1:8765"),
        ("https://user:pw@example.com/mcp?key=x", "https://example.com"),
        ("http://[::1]:9000/mcp", "http://[::1]:9000"),
    ],
)
def test_own_origin_is_scheme_host_and_port_only(url: str, origin: str) -> None:
    assert own_origin(url) == origin


def test_a_session_id_outside_ascii_goes_back_byte_for_byte_and_secrets_stay_in_headers() -> None:
    """PC-70 fails such an id, but the later probes must still carry it (the SDK client cannot)."""
    with httpx2.Client() as client:
        wire = Wire(client, "http://127.0.0.1:1/mcp", {"Authorization": SECRET}, session_id="lax \xe91")
        headers = wire.headers(origin="http://dns-rebinding.example", accept=None)
    raw = dict(headers.raw)
    assert raw[b"mcp-session-id"] == b"lax \xe91"
    assert raw[b"authorization"] == SECRET.encode() and raw[b"origin"] == b"http://dns-rebinding.example"
    assert b"accept" not in raw
    assert wire.headers(session=False, authorization="other").get("authorization") == "other"
