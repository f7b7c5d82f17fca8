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
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from project import copy_project, doit

from mcpipechekr.artifacts import list_runs
from mcpipechekr.findings.home import HOME_ENV
from mcpipechekr.review import approved_bugs, approved_report, seal_problem

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

    process = subprocess.Popen(
        [sys.executable, "-m", "doit", "review", "--web-review", *SELECT],
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
