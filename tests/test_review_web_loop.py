"""`doit review --web-review`: the loop's review decided on the review page, in a real project.

The bundled example is traced and evaluated through doit as a user does; then the review target
runs with `--web-review`, prints the page's address, and waits. The decision is sent to the page's
JSON API (the token in the header, as the page sends it; every request to 127.0.0.1, bounded), and
the target must end 0 with review.json approving exactly the chosen bug, sealed, so that the fix
target can go on.
"""

from __future__ import annotations

import json
import queue
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from project import copy_project, doit

from mcpipechekr.artifacts import list_runs
from mcpipechekr.findings.home import HOME_ENV
from mcpipechekr.kpi import read_kpis
from mcpipechekr.review.bugs import approved_bugs
from mcpipechekr.review.decision import approved_report, seal_problem

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_review_web_loop")]

TASKS = ["find-first-email-ron-chinn", "list-office-move-emails-2024"]
SELECT = [arg for task in TASKS for arg in ("--task", task)]
ADDRESS = re.compile(r"(http://127\.0\.0\.1:\d+)/\?token=([A-Za-z0-9_-]+)")
WAIT_S = 120.0


def call(origin: str, token: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(origin + path, data=data, headers={"X-Review-Token": token})
    if data is not None:
        request.add_header("Content-Type", "application/json")
        request.add_header("Origin", origin)
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read().decode())


def test_the_review_target_waits_for_the_pages_decision(
    tmp_path: Path, emailindex_env: dict[str, str]
) -> None:
    project = copy_project(tmp_path)
    env = {**emailindex_env, HOME_ENV: str(project / "findings-home"), "COLUMNS": "200"}
    assert doit(project, env, "baseline", *SELECT).returncode == 0
    assert doit(project, env, "trace", "evaluate", *SELECT).returncode == 0

    with socket.socket() as probe:  # a port free now, for the page to be served on as asked
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "doit", "review", "--web-review", "--review-port", str(port), *SELECT],
        cwd=project, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout or []], daemon=True).start()
    shown: list[str] = []
    try:
        found = None
        while found is None:
            line = lines.get(timeout=WAIT_S)
            shown.append(line)
            found = ADDRESS.search(line)
        origin, token = found.group(1), found.group(2)
        assert origin == f"http://127.0.0.1:{port}"  # --review-port reached the page
        with urllib.request.urlopen(f"{origin}/?token={token}", timeout=10) as page:
            html = page.read().decode()
        assert "KPIs (loop 1)" in html and "call efficiency" in html.lower()  # the run's kpi.json, shown
        run = call(origin, token, "/api/run")
        chosen = run["selectable"][0]
        answer = call(
            origin, token, "/api/decision", {"decision": "approve", "bugs": [chosen], "annotation": "keep it"}
        )
        assert answer, answer
        assert process.wait(timeout=WAIT_S) == 0, "".join(shown)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
    (run_dir,) = list_runs(project / "runs")
    review, report = approved_report(run_dir)  # refuses a review.json whose seal does not verify
    assert seal_problem(run_dir, review) is None
    assert [bug.id for bug in approved_bugs(review, report)] == [chosen]
    assert [note.text for note in review.annotations] == ["keep it"]
    again = doit(project, env, "review", "--web-review", *SELECT)  # decided: not asked about again
    assert again.returncode == 0 and "127.0.0.1" not in again.stdout


def get(origin: str, token: str, path: str) -> tuple[int, str]:
    """A GET to the page with the token in the header: (status, body), a refusal's status included; 0
    when nothing answers."""
    request = urllib.request.Request(origin + path, headers={"X-Review-Token": token})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()
    except OSError:  # the loop ended and its page with it, between our check and this request
        return 0, ""


LOOP_WAIT_S = 300.0


def test_the_loop_serves_one_page_its_progress_then_each_review(
    tmp_path: Path, emailindex_env: dict[str, str]
) -> None:
    """`doit loop --web-review`: one address for the loop; progress while it works, the review when due.

    Approve at the first review and let the fix run: the second run has no server-side bug left, so the
    loop ends by itself, 0, and the page shows that run: the task from 5 calls to 1, the KPIs.
    `/api/progress` is polled all along (in a thread, bounded) and must have counted Phase 1's attempts
    at least once.
    """
    project = copy_project(tmp_path)
    env = {**emailindex_env, HOME_ENV: str(project / "findings-home"), "COLUMNS": "200"}
    assert doit(project, env, "baseline", *SELECT).returncode == 0
    process = subprocess.Popen(
        [sys.executable, "-m", "doit", "loop", "--web-review", *SELECT],
        cwd=project, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in process.stdout or []:
            lines.put(line)
        lines.put("")  # the end: the loop stopped before printing the address, say so rather than wait

    threading.Thread(target=read, daemon=True).start()
    shown: list[str] = []
    seen: list[dict[str, Any]] = []
    stop = threading.Event()
    deadline = time.monotonic() + LOOP_WAIT_S
    try:
        found = None
        while found is None:
            line = lines.get(timeout=WAIT_S)
            assert line, "".join(shown)
            shown.append(line)
            found = ADDRESS.search(line)
        origin, token = found.group(1), found.group(2)

        def watch() -> None:  # the page's poll, faster: Phase 1 of the demo models takes seconds
            while not stop.is_set() and time.monotonic() < deadline:
                status, body = get(origin, token, "/api/progress")
                if status == 200:
                    seen.append(json.loads(body))
                time.sleep(0.05)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        status, html = get(origin, token, "/")
        assert status == 200 and ("Progress" in html or "Review of" in html), html[:500]
        reviews: list[str] = []
        ended, last_view = "", {}
        while process.poll() is None and time.monotonic() < deadline and not ended:
            status, body = get(origin, token, "/api/run")
            if status == 409 and "the loop has ended" in body:  # it ended by itself: its last run, shown
                last_view = json.loads(get(origin, token, "/api/progress")[1])
                _, ended = get(origin, token, "/")  # the loop waits for a watched page to load this
                break
            run = json.loads(body or "{}") if status == 200 else {}
            if status != 200 or run.get("run_id") in reviews:
                time.sleep(0.2)
                continue
            reviews.append(run["run_id"])
            assert json.loads(get(origin, token, "/api/progress")[1])["phase"] == "review"  # it waits
            # every server bug: the date sort the first task pages without
            decision = {"decision": "approve", "bugs": run["selectable"], "annotation": ""}
            assert call(origin, token, "/api/decision", decision)["decision"] == "approve"
        assert process.wait(timeout=max(1.0, deadline - time.monotonic())) == 0
    finally:
        stop.set()
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
        while not lines.empty():
            shown.append(lines.get_nowait())
    output = "".join(shown)
    assert "loop finished" in output, output
    assert len(ADDRESS.findall(output)) == 1, output  # one page, its address printed once
    assert len(reviews) == 1, output  # the second run has no server-side bug: no review is asked for
    assert "has no server-side bug left to fix" in output, output
    # the page, once the loop ended by itself: why, the fix measured task by task, and the KPIs met
    assert "The loop ended: run-" in ended and "has no server-side bug left to fix" in ended, ended[:2000]
    assert "find-first-email-ron-chinn: 5 → 1 calls" in ended, ended[:2000]
    kpis = ended[ended.index("KPIs (loop 2)") :]
    efficiency = kpis[kpis.index("call efficiency ratio") :].split("</tr>")[0]
    assert ">met<" in efficiency and "better" in efficiency, efficiency
    counted = [view for view in seen if view["phase"] == "phase 1" and view["total"]]
    assert counted, seen[-20:]
    assert any(view["done"] + view["running"] > 0 for view in counted), counted[-5:]
    assert last_view["phase"] == "ended" and "no server-side bug" in (last_view["ended"] or ""), last_view
    assert "find-first-email-ron-chinn: 5 → 1 calls" in output, output  # the fixed sort, task by task
    first, last = (read_kpis(run_dir) for run_dir in list_runs(project / "runs")[:2])
    assert first is not None and last is not None and last.loop == 2
    ratio = {kpi.name: kpi.value for kpi in first.kpis}, {kpi.name: kpi.value for kpi in last.kpis}
    assert ratio[1]["call_efficiency_ratio"] < ratio[0]["call_efficiency_ratio"], ratio
