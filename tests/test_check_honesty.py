"""Annotation honesty (PC-12, PC-13) against a real server whose hints promise more than some tools keep.

tests/servers/honesty_server.py is started from its own folder with no `cwd`, as `check --command`
starts a server from wherever it runs, so check's own files (the findings home with the server's
log) land inside the folder it watches and must not count. A second check cuts the snapshot
with a small bound, and the unseen part must yield no FAIL.
"""

from __future__ import annotations

import sys
from pathlib import Path

import mcp_types
import pytest

from mcpipechekr.artifacts.check_report import CheckReport, CheckResult
from mcpipechekr.check import footprint
from mcpipechekr.check.footprint import Snapshotter, compare
from mcpipechekr.check.honesty import first_difference
from mcpipechekr.check.orchestrate import run_check
from mcpipechekr.check.report import render
from mcpipechekr.config import Config, ServerConfig

pytestmark = pytest.mark.xdist_group("test_check_honesty")

SERVER = Path(__file__).resolve().parent / "servers" / "honesty_server.py"


def checked(
    folder: Path, files: int = 0, bound: int | None = None, read_only: tuple[str, ...] = ()
) -> CheckReport:
    """Check the server from `folder` (its working folder), holding `files` more files, under `bound`,
    with `read_only` trusted by its author."""
    folder.mkdir()
    (folder / "shelf.txt").write_text("dune emma ulysses\n", encoding="utf-8")
    for index in range(files):
        (folder / f"f{index:03d}.txt").write_text(f"{index}\n", encoding="utf-8")
    config = Config(
        server=ServerConfig(name="honesty", command=sys.executable, args=[str(SERVER)]),
        check={"read_only": list(read_only)},
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        if bound is not None:
            patch.setattr(footprint, "MAX_ENTRIES", bound)
        return run_check(config, layers=["protocol"])


def by_id(report: CheckReport) -> dict[str, CheckResult]:
    return {result.id: result for result in report.checks}


@pytest.fixture(scope="module")
def honesty(tmp_path_factory: pytest.TempPathFactory) -> tuple[CheckReport, Path]:
    folder = tmp_path_factory.mktemp("honesty") / "shop"
    return checked(folder), folder


def test_a_read_only_tool_that_writes_fails_naming_the_tool_and_the_path(honesty) -> None:
    report, folder = honesty
    result = by_id(report)["PC-12:record_visit"]
    assert result.status == "FAIL"
    assert result.tool == "record_visit"
    assert "annotated readOnlyHint: true" in result.reason
    assert f"created {folder.resolve() / 'visits'}" in result.reason  # the new folder, not each file in it
    assert result.details["created"] == [str(folder.resolve() / "visits")]
    assert report.exit_code == 1
    late = by_id(report)["PC-12:late_write"]
    assert late.status == "FAIL" and "zz-late-" in late.reason


def test_an_unannotated_tool_is_held_to_its_authors_trust_only_once_trusted(
    honesty, tmp_path: Path
) -> None:
    report, folder = honesty
    assert "PC-12:guest_list" not in by_id(report) and not (folder / "guests.log").exists()
    trusted = checked(tmp_path / "shop", read_only=("guest_list",))
    result = by_id(trusted)["PC-12:guest_list"]
    assert result.status == "FAIL"
    assert "trusted as read-only by its author (check.read_only), but its" in result.reason
    assert f"created {(tmp_path / 'shop').resolve() / 'guests.log'}" in result.reason


def test_a_read_only_tool_that_writes_nothing_passes(honesty) -> None:
    report, folder = honesty
    checks = by_id(report)
    for tool in ("shelf_count", "next_ticket", "lucky_draw", "touch_shelf"):  # touch_shelf: same bytes
        assert checks[f"PC-12:{tool}"].status == "PASS", checks[f"PC-12:{tool}"].reason
    assert "changed nothing under " + str(folder.resolve()) in checks["PC-12:shelf_count"].reason
    assert not checks["PC-12:shelf_count"].details["partial"]
    # check's own home (the server's log is written there during the calls) is not watched
    assert (folder / ".mcpipechekr").is_dir()
    failed = sorted(r.id for r in report.checks if r.status == "FAIL")
    assert failed == ["PC-12:late_write", "PC-12:record_visit"]


def test_an_idempotent_tool_with_a_moving_answer_warns(honesty) -> None:
    report, _ = honesty
    checks = by_id(report)
    counter = checks["PC-13:next_ticket"]
    assert counter.status == "WARN"
    assert "'Now serving ticket 1' then 'Now serving ticket 2'" in counter.reason
    assert counter.details["where"] == "/structuredContent/result"
    draw = checks["PC-13:lucky_draw"]
    assert draw.status == "WARN"
    assert draw.details["where"] == "/content/0/draw"  # a dict is answered as JSON text


def test_an_answer_that_differs_only_by_times_and_ids_does_not_warn(honesty) -> None:
    report, _ = honesty
    result = by_id(report)["PC-13:shelf_count"]
    assert result.status == "PASS", result.reason


def test_an_idempotent_tool_that_may_write_is_not_called(honesty) -> None:
    report, folder = honesty
    checks = by_id(report)
    assert checks["PC-13:save_note"].status == "SKIP"
    assert "readOnlyHint: false" in checks["PC-13:save_note"].reason
    assert "PC-12:save_note" not in checks  # it promises no read-only
    assert not (folder / "note.txt").exists()
    assert "PC-13:record_visit" not in checks  # it promises no idempotence


def test_the_text_report_shows_the_verdicts(honesty) -> None:
    report, _ = honesty
    text = render(report, "text")
    assert "PC-12:record_visit read-only tool changes nothing" in text
    assert "PC-13:next_ticket idempotent tool answers alike" in text


def test_a_partial_snapshot_says_so_and_claims_nothing_it_did_not_see(tmp_path: Path) -> None:
    report = checked(tmp_path / "big", files=60, bound=20)
    checks = by_id(report)
    for tool in ("record_visit", "late_write", "touch_shelf", "shelf_count"):
        result = checks[f"PC-12:{tool}"]
        assert result.status == "PASS", result.reason
        assert result.details["partial"] is True
        assert "the snapshot was partial (more than 20 entries)" in result.reason
    assert not [r.id for r in report.checks if r.status == "FAIL"]


# --- the parts, without a server ----------------------------------------------------------------------


def test_snapshot_bound_symlinks_and_contents(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("x", encoding="utf-8")
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("one", encoding="utf-8")
    (root / "link").symlink_to(outside)
    (root / "__pycache__").mkdir()
    taker = Snapshotter([str(root)])
    before = taker.take()
    assert str(root / "link") in before.entries and before.entries[str(root / "link")].kind == "link"
    assert not any("secret" in path for path in before.entries)  # a link is never followed
    assert not any("__pycache__" in path for path in before.entries)
    (root / "a.txt").write_text("one", encoding="utf-8")  # same bytes: no change
    (root / "__pycache__" / "m.pyc").write_bytes(b"\0")  # an interpreter's byte code: not watched
    assert not compare(before, taker.take())
    (root / "a.txt").write_text("two", encoding="utf-8")
    (root / "sub" / "new").mkdir()
    (root / "sub" / "new" / "deep.txt").write_text("x", encoding="utf-8")
    changes = compare(before, taker.take())
    assert changes.modified == [str(root / "a.txt")]
    assert changes.created == [str(root / "sub" / "new")]


def test_a_cut_snapshot_judges_only_folders_it_listed(tmp_path: Path) -> None:
    for index in range(10):
        (tmp_path / f"f{index}").write_text("x", encoding="utf-8")
    taker = Snapshotter([str(tmp_path)], max_entries=5)
    before = taker.take()
    assert before.partial and str(tmp_path) not in before.listed
    (tmp_path / "a-new").write_text("x", encoding="utf-8")  # sorts first: it pushes f3 out of the view
    after = taker.take()
    assert not compare(before, after)


def _text(*lines: str) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text="\n".join(lines))])


@pytest.mark.parametrize(
    ("one", "two"),
    [
        ("generated 2026-01-05T10:00:00.123Z", "generated 2026-01-05T10:00:01.456Z"),
        ("took 12ms", "took 9 ms"),
        ("at 10:00:01", "at 10:00:02"),
        ("id 3f2b8c9e-1a2b-4c3d-8e9f-0a1b2c3d4e5f", "id 9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a"),
        ("epoch 1767600000.5", "epoch 1767600001.25"),
        (
            '{"n": 3, "updatedAt": "yesterday", "traceId": "abc"}',
            '{"n": 3, "updatedAt": "today", "traceId": "x"}',
        ),
    ],
)
def test_times_and_ids_are_no_difference(one: str, two: str) -> None:
    assert first_difference(_text(one), _text(two)) is None


def test_a_real_difference_is_shown_where_it_is() -> None:
    assert first_difference(_text("a", "count: 3"), _text("a", "count: 4")) == (
        "/content/0 line 2",
        "'count: 3'",
        "'count: 4'",
    )
    assert first_difference(_text('{"items": [1, 2]}'), _text('{"items": [1, 3]}')) == (
        "/content/0/items/1",
        "2",
        "3",
    )
