"""The live progress line: what it says, where it goes, and that output printed meanwhile stays whole."""

from __future__ import annotations

import io
import sys
import time

import pytest

from mcpipechekr._util import progress
from mcpipechekr._util.progress import Activity, _LiveLine, eta_text


def test_the_line_counts_done_running_failed_and_estimates_the_rest() -> None:
    with Activity("phase 1", total=8) as shown:
        shown.started()
        shown.started()
        shown.finished()
        shown.finished(failed=True)
        shown.skipped()  # an attempt found up to date: not part of the work
        shown.detail("fix-the-sort: agent run 1:   editing   server.py\n")
        assert progress.current() is shown
        line = shown.line()
    assert line.startswith("phase 1: 2/7 done, 0 running, 1 failed · 0:0")
    assert " · ETA " in line and line.endswith(" · fix-the-sort: agent run 1: editing server.py")
    assert progress.current() is None


def test_eta_from_the_pace_so_far() -> None:
    assert eta_text(60.0, 2, 8) == "ETA 3:00"
    assert eta_text(3600.0, 1, 3) == "ETA 2:00:00"
    assert eta_text(5.0, 0, 8) == "" and eta_text(5.0, 8, 8) == "" and eta_text(5.0, 3, None) == ""


def test_a_nested_activity_names_itself_in_the_line_that_is_up() -> None:
    with Activity("phase 1", total=2) as outer:
        with Activity("lint") as inner:
            assert progress.current() is outer and inner is not outer
            assert outer.line().endswith(" · lint")
        assert not outer.line().endswith(" · lint")


def test_detail_without_an_activity_does_nothing() -> None:
    assert progress.current() is None
    progress.detail("nobody listens")  # no display, no error


def test_nothing_is_drawn_off_a_terminal_or_when_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under pytest stdout is no terminal: the counts are kept, the line is never drawn."""
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    with Activity("evaluate") as shown:
        time.sleep(0.3)
        assert shown._live is None
    assert err.getvalue() == ""
    progress.set_quiet(True)
    try:
        assert not progress.is_live()
    finally:
        progress.set_quiet(False)


def test_output_printed_under_the_line_clears_it_and_stays_on_its_own_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    live = _LiveLine(lambda: "phase 1: 1/2 done", width=80, interval_s=0.02)
    live.start()
    try:
        time.sleep(0.2)
        print('{"result": 1}')  # what a JSON output would be: untouched on stdout
        sys.stdout.write("half a line")
        time.sleep(0.2)  # not redrawn in the middle of a line
        sys.stdout.write(" and its end\n")
        time.sleep(0.2)
    finally:
        live.stop()
    assert sys.stdout is out and sys.stderr is err
    assert out.getvalue() == '{"result": 1}\nhalf a line and its end\n'
    drawn = err.getvalue()
    assert "\r\x1b[2Kphase 1: 1/2 done" in drawn
    assert drawn.endswith("\r\x1b[2K")  # erased at the end: nothing left behind
