"""PC-50…PC-59 against real servers: an SDK server that gets prompts, resources, templates,
completions and subscriptions right, and a raw JSON-RPC server with each defect planted.

Each server is checked once per module (a start costs about a second); the shape
validators of check/spec_shapes.py are tested on their own below.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from mcpipechekr.artifacts.check_report import CheckReport, CheckResult
from mcpipechekr.check.orchestrate import run_check
from mcpipechekr.check.report import to_json, to_junit
from mcpipechekr.check.spec_features import FEATURE_CHECKS
from mcpipechekr.check.spec_shapes import (
    block_problems,
    completion_problems,
    contents_problems,
    expand_template,
    message_problems,
    template_pattern,
    template_variables,
)
from mcpipechekr.config import Config, ServerConfig

pytestmark = pytest.mark.xdist_group("test_check_spec_features")

SERVERS = Path(__file__).resolve().parent / "servers"


def check(tmp_path_factory: pytest.TempPathFactory, script: str, *args: str) -> dict[str, CheckResult]:
    server = ServerConfig(name=script, command=sys.executable, args=[str(SERVERS / script), *args])
    log = tmp_path_factory.mktemp("check") / "server.stderr.log"
    report = run_check(Config(server=server), layers=["protocol"], log_path=log)
    return {result.id: result for result in report.checks} | {"report": report}  # type: ignore[dict-item]


@pytest.fixture(scope="module")
def correct(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CheckResult]:
    return check(tmp_path_factory, "features_server.py")


@pytest.fixture(scope="module")
def defective(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CheckResult]:
    return check(tmp_path_factory, "features_raw.py")


def test_a_correct_server_passes_every_feature_check(correct) -> None:
    assert {check_id: correct[check_id].status for check_id in FEATURE_CHECKS} == dict.fromkeys(
        FEATURE_CHECKS, "PASS"
    )
    report: CheckReport = correct["report"]  # type: ignore[assignment]
    assert [r.id for r in report.checks if r.status in ("FAIL", "WARN")] == []
    assert "'gardening'" in correct["PC-50"].reason
    assert correct["PC-53"].reason.startswith("JSON-RPC error -32602")
    assert "notes://note/first" in correct["PC-56"].reason  # the slug came from completion
    assert "subscriptions/listen acknowledged" in correct["PC-57"].reason  # a 2026-07-28 session
    assert set(correct["PC-59"].details["types"]) == {"image", "resource", "resource_link", "text"}


def test_each_planted_defect_is_a_fail(defective) -> None:
    statuses = {check_id: defective[check_id].status for check_id in FEATURE_CHECKS}
    assert statuses == {**dict.fromkeys(FEATURE_CHECKS, "FAIL"), "PC-56": "PASS"}
    assert "completion: Field required" in defective["PC-50"].reason
    assert "completion: Field required" in defective["PC-51"].reason
    assert "got 'system'" in defective["PC-52"].reason
    assert "without its required 'text' as if nothing were wrong" in defective["PC-53"].reason
    assert (
        "unknown prompt" in defective["PC-54"].reason
        and "as if nothing were wrong" in defective["PC-54"].reason
    )
    assert defective["PC-55"].reason.startswith("bad://shape: malformed answer")
    # the template variable was filled from the listed bad://item/7
    assert defective["PC-56"].details["uri"] == "bad://item/7"
    assert "-32601" in defective["PC-57"].reason  # a 2025-11-25 session: resources/subscribe
    assert defective["PC-58"].reason == "status: isError is 'false', not a boolean"
    assert defective["PC-59"].reason == "tool status content[1] (image) data is not valid base64"
    # the SDK's lax model let the string isError through: PC-10 alone saw nothing wrong
    assert defective["PC-10:status"].status == "PASS"


def test_json_and_junit_carry_the_feature_ids(defective) -> None:
    report: CheckReport = defective["report"]  # type: ignore[assignment]
    ids = {check["id"] for check in json.loads(to_json(report))["checks"]}
    assert set(FEATURE_CHECKS) <= ids
    cases = ET.fromstring(to_junit(report)).iter("testcase")
    failed = {case.get("name", "").split()[0] for case in cases if case.find("failure") is not None}
    assert {"PC-50", "PC-53", "PC-54", "PC-58"} <= failed


def test_completion_past_100_values_and_a_string_total_fail(tmp_path_factory) -> None:
    checks = check(tmp_path_factory, "features_raw.py", "--long-completion")
    assert checks["PC-50"].status == "FAIL"
    assert "150 items; at most 100" in checks["PC-50"].reason
    assert "completion.total is not an integer (got '150')" in checks["PC-50"].reason


# --- the shape validators ---------------------------------------------------------------------------


def test_completion_problems() -> None:
    assert completion_problems({"completion": {"values": ["a"], "total": 1, "hasMore": False}}) == []
    assert completion_problems({"completion": {"values": [], "total": None}}) == []  # null is absent
    assert completion_problems({}) == ["no `completion` object in the result"]
    assert completion_problems({"completion": {"values": [1], "hasMore": "no", "total": True}}) == [
        "completion.values holds 1 non-string value(s), e.g. 1",
        "completion.total is not an integer (got True)",
        "completion.hasMore is not a boolean (got 'no')",
    ]


def test_message_and_block_problems() -> None:
    assert message_problems({"messages": [{"role": "user", "content": {"type": "text", "text": "x"}}]}) == []
    assert message_problems({"messages": [{"role": "tool", "content": "x"}]}) == [
        "messages[0].role is 'tool', not 'user' or 'assistant'",
        "messages[0].content is not a content block object",
    ]
    assert block_problems({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}, "b") == []
    assert block_problems({"type": "image", "data": "AA=A"}, "b") == [
        "b (image) data is not valid base64",
        "b (image) has no mimeType",
    ]
    assert block_problems({"type": "resource_link", "uri": "x://y"}, "b") == ["b (resource_link) has no name"]
    assert block_problems({"type": "resource", "resource": {"uri": "x://y"}}, "b") == [
        "b (resource).resource has neither text nor blob"
    ]
    assert block_problems({"type": "video"}, "b") == ["b has an unknown type 'video'"]
    assert contents_problems({"uri": "x://y", "blob": "AAAA", "mimeType": 3}, "c") == [
        "c.mimeType is not a string"
    ]


def test_uri_templates() -> None:
    assert template_variables("file:///{+path}{?q,lang}") == ["path", "q", "lang"]
    assert template_variables("file:///{+path}{?q,lang}", required_only=True) == ["path"]
    assert expand_template("notes://{slug}/x{?q}", {"slug": "a b", "q": "1"}) == "notes://a%20b/x?q=1"
    assert expand_template("file:///{+path}{?q}", {"path": "a/b"}) == "file:///a/b"
    pattern = template_pattern("notes://note/{slug}")
    assert pattern is not None and pattern.match("notes://note/first")["v0"] == "first"
    assert pattern.match("notes://note/a/b") is None
    assert template_pattern("x://{?q}") is None
