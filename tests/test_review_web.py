"""`mcpipechekr review RUN --web`: the review decided on a page, in a real headless Chromium.

The command runs as a user runs it, a subprocess, on a run with two bugs the
server can fix and one agent-behaviour bug whose trigger is hostile markup.
Its printed address (with the token) is opened in Chromium (Debian's
`chromium`, driven by Playwright as tests/test_report.py drives it, no browser
download). One bug is ticked, an annotation typed, Approve pressed: review.json
must approve exactly that bug, with a seal that verifies, and the command must
end 0. Requests without the token, with a wrong one, from another origin, and
decisions the page must refuse are sent by urllib to 127.0.0.1, every wait
bounded. With $MCPIPECHEKR_REVIEW_SCREENSHOT set to a path, the screenshot of
the page is copied there (that is how docs/review.png is made).
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import git
import pytest
import yaml
from headless import launched_chromium
from trace_builder import call, make_trace, say

from mcpipechekr.artifacts import (
    Bug,
    BugReport,
    Evidence,
    Manifest,
    PhaseProviders,
    Review,
    RunDir,
    ServerRef,
    read_model,
    write_model,
)
from mcpipechekr.artifacts.trace import write_trace
from mcpipechekr.evaluate.narrative import render_narrative
from mcpipechekr.report import step_id
from mcpipechekr.review.bugs import approved_bugs
from mcpipechekr.review.decision import approved_report, seal_problem

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_review_web")]

RUN_ID = "run-20261202-001"
T0 = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
TASK = "find-first-email-ron-chinn"
STEM = f"{TASK}__demo__r001"
HOSTILE = '<script>window.__injected = 1</script><img src="x" onerror="window.__injected = 2">'
SCREENSHOT_ENV = "MCPIPECHEKR_REVIEW_SCREENSHOT"
SORT = "GAP-no-date-sort-query-email-database"
FTS = "BUG-no-such-column-fts-rank-query-email-database"
AGENT = "EFF-repeated-calls-query-email-database"
NOTE = "prefer a sort_order parameter over date windows"
WAIT_S = 60.0


def bug(
    bug_id: str, bug_type: str, gap: int, steps: list[int], *, fixable_by: str = "server", trigger: str
) -> Bug:
    return Bug(
        id=bug_id,
        type=bug_type,  # type: ignore[arg-type]
        severity="high" if bug_type == "bug" else "medium",
        source="analyzer",
        tool="query_email_database",
        task_id=TASK,
        trigger=trigger,
        observed=f"costs {gap} tokens more than needed",
        expected="one call",
        acceptance_criteria=["answers in one call"],
        token_cost_observed=gap + 400,
        token_cost_optimal=400,
        token_cost_of_gap=gap,
        occurrences=1,
        task_ids=[TASK],
        fixable_by=fixable_by,  # type: ignore[arg-type]
        evidence=[Evidence(task_id=TASK, trace=f"traces/{STEM}.json", steps=steps)],
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project whose runs/ holds one evaluated run: two server bugs, one agent bug, one trace."""
    config = {
        "server": {"command": "python", "args": ["server.py"], "repo": "server"},
        "paths": {"runs": "runs"},
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    git.Repo.init(tmp_path / "server", initial_branch="main").close()
    run = RunDir(tmp_path / "runs" / RUN_ID)
    run.root.mkdir(parents=True)
    bugs = [
        bug(SORT, "feature_gap", 1_850, [1, 3], trigger="finding the earliest match by date"),
        bug(FTS, "bug", 1_164, [3], trigger='calling with {"sort": "rank"}'),
        bug(AGENT, "efficiency", 900, [5], fixable_by="agent", trigger=HOSTILE),
    ]
    report = BugReport(run_id=RUN_ID, phase1_provider="demo", evaluated_at=T0, bugs=bugs)
    write_model(run.bug_report, report)
    run.phase2_narrative.write_text(render_narrative(report, traces=1), encoding="utf-8")
    manifest = Manifest(
        run_id=RUN_ID,
        started_at=T0,
        harness_version="0.1.0",
        mcp_server_sha="0123456789abcdef0123",
        task_file_hash="sha256:" + "0" * 64,
        providers=PhaseProviders(phase1="demo", phase2="demo", phase3="demo"),
        config_hash="sha256:" + "1" * 64,
        server=ServerRef(name="emailindex", transport="stdio", command="python server.py"),
        task_ids=[TASK],
    ).finished("completed", at=T0 + timedelta(minutes=2))
    write_model(run.manifest, manifest)
    steps = [
        say("looking for Ron Chinn's first email"),
        call("query_email_database", {"keywords": "ron chinn"}, {"rows": [{"id": 1}]}),
        say("these are not sorted by date; trying a window"),
        call("query_email_database", {"keywords": "ron chinn", "sort": "rank"}, error="no such column: rank"),
        say(HOSTILE),
        call("query_email_database", {"keywords": "ron chinn", "after": "2020-01-01"}, {"rows": []}),
    ]
    write_trace(run, make_trace(TASK, steps))
    return tmp_path


class Served:
    """`mcpipechekr review RUN --web` running in `project`: its address, token, and output so far."""

    def __init__(self, project: Path) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mcpipechekr", "review", RUN_ID, "--web", "--config", "config.yaml"],
            cwd=project,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.output: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.url = self._address()
        parts = urlsplit(self.url)
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.token = parts.query.removeprefix("token=")

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def _address(self) -> str:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                if self.process.poll() is not None:
                    break
                continue
            self.output.append(line)
            if "review page → " in line:
                return line.split("review page → ", 1)[1].strip()
        raise AssertionError("no review page address printed:\n" + "".join(self.output))

    def finish(self, timeout: float = WAIT_S) -> tuple[int, str]:
        """Wait for the command to end; its exit code and everything it printed."""
        code = self.process.wait(timeout=timeout)
        time.sleep(0.1)  # the reader thread drains the pipe
        while not self.lines.empty():
            self.output.append(self.lines.get_nowait())
        return code, "".join(self.output)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def request(
        self,
        path: str,
        *,
        body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, Any] | str]:
        """One request to the server (127.0.0.1 only, 10 s at most): its status and its JSON (or text)."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.origin + path, data=data, headers=headers or {})
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                status, raw = answer.status, answer.read().decode()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read().decode()
        try:
            return status, json.loads(raw)
        except json.JSONDecodeError:
            return status, raw

    def decide(self, body: dict[str, Any]) -> tuple[int, dict[str, Any] | str]:
        """A POST as the page sends it: the token in the header, the page's own Origin."""
        return self.request(
            "/api/decision", body=body, headers={"X-Review-Token": self.token, "Origin": self.origin}
        )


@pytest.fixture
def served(project: Path) -> Iterator[Served]:
    server = Served(project)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with launched_chromium("the review page tests") as launched:
        yield launched


def test_without_the_token_from_another_origin_or_out_of_scope_nothing_is_recorded(
    served: Served, project: Path
) -> None:
    run = RunDir(project / "runs" / RUN_ID)
    assert urlsplit(served.url).hostname == "127.0.0.1"
    assert served.request("/")[0] == 403  # no token
    assert served.request("/api/run")[0] == 403
    assert served.request("/?token=wrong")[0] == 403
    assert served.request("/api/run", headers={"X-Review-Token": "wrong"})[0] == 403
    assert served.request(f"/trace/{STEM}")[0] == 403
    approve_fts = {"decision": "approve", "bugs": [FTS], "annotation": ""}
    # a page elsewhere that learnt the token still cannot decide
    status, _ = served.request(
        "/api/decision",
        body=approve_fts,
        headers={"X-Review-Token": served.token, "Origin": "http://evil.test"},
    )
    assert status == 403
    # without Origin, only with the token in the header (a link or a form cannot set one)
    status, _ = served.request(f"/api/decision?token={served.token}", body=approve_fts)
    assert status == 403
    status, answer = served.decide({"decision": "approve", "bugs": [], "annotation": NOTE})
    assert status == 400 and "at least one bug" in answer["error"]
    status, answer = served.decide({"decision": "approve", "bugs": [FTS, "BUG-made-up"]})
    assert status == 400 and "BUG-made-up" in answer["error"] and FTS not in answer["error"]
    status, answer = served.decide({"decision": "approve", "bugs": [AGENT]})
    assert status == 400 and AGENT in answer["error"] and "agent behaviour" in answer["error"]
    status, answer = served.decide({"decision": "approve", "bug_ids": [FTS]})
    assert status == 400 and "bug_ids" in answer["error"]
    assert not run.review.exists()
    assert read_model(run.manifest, Manifest).reviews == []
    status, view = served.request("/api/run", headers={"X-Review-Token": served.token})
    assert status == 200
    assert view["selectable"] == [FTS, SORT]  # fix order: the bug before the feature gap
    assert [bug["id"] for bug in view["bugs"]] == [FTS, SORT, AGENT]
    assert view["bugs"][2]["selectable"] is False
    # the exit the page's Exit button sends, from a script: the token in the header, no Origin
    status, answer = served.request(
        "/api/decision", body={"decision": "exit", "bugs": []}, headers={"X-Review-Token": served.token}
    )
    assert status == 200 and answer["decision"] == "exit"
    code, output = served.finish()
    assert code == 0, output
    review = read_model(run.review, Review)
    assert review.decision == "exit" and review.bug_ids == [] and seal_problem(run, review) is None
    assert run.session_summary.exists()  # as the CLI's exit
    assert "exit: nothing will be fixed" in output


def test_ctrl_c_stops_the_page_with_nothing_recorded(served: Served, project: Path) -> None:
    run = RunDir(project / "runs" / RUN_ID)
    served.process.send_signal(signal.SIGINT)
    code, output = served.finish()
    assert code == 130, output
    assert not run.review.exists() and not run.session_summary.exists()
    assert read_model(run.manifest, Manifest).reviews == []


def test_one_of_two_bugs_ticked_annotated_and_approved_on_the_page(
    served: Served, project: Path, browser: Any, tmp_path: Path
) -> None:
    run = RunDir(project / "runs" / RUN_ID)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    requests: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("request", lambda request: requests.append(request.url))
    try:
        page.goto(served.url, timeout=WAIT_S * 1000)
        rows = page.locator("table.bugs tr.bug")
        assert rows.evaluate_all("rows => rows.map(r => r.dataset.bug)") == [FTS, SORT, AGENT]
        assert page.locator("input.pick").evaluate_all("boxes => boxes.map(b => b.value)") == [FTS, SORT]
        agent_row = page.locator(f'tr[data-bug="{AGENT}"]')
        assert agent_row.locator("input").count() == 0 and "agent behaviour" in agent_row.inner_text()
        assert HOSTILE in agent_row.inner_text()  # shown as text, never run
        assert page.evaluate("window.__injected") is None
        assert page.locator("#approve").is_disabled()  # nothing ticked yet

        # the evidence link opens the trace at the wasted step
        link = page.locator(f'tr[data-bug="{FTS}"] a.evidence')
        href = link.get_attribute("href")
        assert href is not None and href.startswith(f"/trace/{STEM}?token=")
        target = step_id(RUN_ID, STEM, 3)
        assert href.endswith(f"#{target}")
        trace = browser.new_page(viewport={"width": 1280, "height": 900})
        try:
            trace.goto(served.origin + href, timeout=WAIT_S * 1000)
            step = trace.locator(f"#{target}")
            step.wait_for(state="visible", timeout=10_000)
            assert "focus" in (step.get_attribute("class") or "") and "wasted" in step.get_attribute("class")
            assert "no such column: rank" in step.inner_text()
            assert trace.evaluate("window.__injected") is None  # the hostile model text, as text
        finally:
            trace.close()

        page.locator(f'input.pick[value="{SORT}"]').check()
        page.locator("#annotation").fill(NOTE)
        assert page.locator("#approve").inner_text() == "Approve selected (1)"
        shot = tmp_path / "review.png"
        page.screenshot(path=str(shot), full_page=True)
        if target_path := os.environ.get(SCREENSHOT_ENV):
            shutil.copyfile(shot, target_path)
        page.locator("#approve").click()
        page.locator("#status.done").wait_for(timeout=WAIT_S * 1000)
        assert "approved 1 bug(s) for the fix loop" in page.locator("#status").inner_text()
    finally:
        page.close()
    assert errors == []
    assert all(urlsplit(url).netloc == urlsplit(served.origin).netloc for url in requests)  # nothing else
    code, output = served.finish()
    assert code == 0, output
    review, report = approved_report(run)  # the seal verifies, the report is the one shown
    assert review.decision == "approve" and review.bug_ids == [SORT]
    assert [bug.id for bug in approved_bugs(review, report)] == [SORT]
    assert [note.text for note in review.annotations] == [NOTE]
    (entry,) = read_model(run.manifest, Manifest).reviews
    assert entry.decision == "approve" and entry.bug_ids == [SORT]
    assert f"fix {RUN_ID}` works through the approved bugs" in output
