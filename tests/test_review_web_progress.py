"""The loop's review page between reviews: `GET /api/progress` and the progress view, without a loop.

`LoopPage` is started as `doit loop --web-review` starts it; the work is played by a live progress
activity (`_util.progress`), the one Phase 1 and the fix step report to. What must hold: the counts the
activity holds are what the page answers, the fix agent's last line is redacted, a request without the
token is refused, and with no review waiting nothing can be decided (409).
"""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from mcpipechekr._util import progress
from mcpipechekr.config import load_config
from mcpipechekr.review_web import TOKEN_HEADER, LoopPage, loop_page
from mcpipechekr.review_web._page import PROGRESS_POLICY

SECRET = "s3cret-value-0123456789"


@pytest.fixture
def page(tmp_path: Path) -> Iterator[LoopPage]:
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"server": {"command": "python", "args": ["s.py"]}}))
    config = load_config(tmp_path / "config.yaml", environ={"MY_API_KEY": SECRET})
    with loop_page(config, Console(file=io.StringIO()), enabled=True) as opened:
        assert opened is not None
        yield opened


def get(page: LoopPage, path: str, token: str | None = None) -> tuple[int, str, dict[str, str]]:
    request = urllib.request.Request(
        page.server.origin + path, headers={TOKEN_HEADER: token or page.server.token}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode(), dict(answer.headers)
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode(), dict(refused.headers)


def test_progress_answers_the_current_activitys_counts_and_redacts_the_agents_line(page: LoopPage) -> None:
    status, body, _ = get(page, "/api/progress")
    assert status == 200 and json.loads(body)["phase"] == "idle"
    page.progress.at("run-20261205-001", 1)
    with progress.Activity("phase 1", total=4) as phase1:
        phase1.started()
        phase1.started()
        phase1.finished()
        phase1.started()
        phase1.finished(failed=True)
        view = json.loads(get(page, "/api/progress")[1])
    assert (view["phase"], view["run_id"], view["iteration"]) == ("phase 1", "run-20261205-001", 1)
    assert (view["done"], view["running"], view["failed"], view["total"]) == (2, 1, 1, 4)
    assert view["review_pending"] is False
    with progress.Activity("fix"):
        progress.detail(f"BUG-x: agent run 1: export MY_API_KEY={SECRET}")
        status, body, _ = get(page, "/api/progress")
    assert status == 200 and SECRET not in body and "${MY_API_KEY}" in json.loads(body)["detail"]


def test_between_reviews_the_page_shows_progress_and_nothing_can_be_decided(page: LoopPage) -> None:
    status, html, headers = get(page, "/")
    assert status == 200 and 'id="progress"' in html and "/api/progress" in html
    assert headers["Content-Security-Policy"] == PROGRESS_POLICY and "connect-src 'self'" in PROGRESS_POLICY
    assert get(page, "/api/run")[0] == 409
    request = urllib.request.Request(
        page.server.origin + "/api/decision",
        data=b'{"decision": "exit"}',
        headers={TOKEN_HEADER: page.server.token, "Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 409
    assert get(page, "/api/progress", token="wrong")[0] == 403
    assert page.server.server_address[0] == "127.0.0.1"


@pytest.mark.slow
def test_in_a_browser_the_progress_polls_turns_into_the_review_and_back(tmp_path: Path) -> None:
    """The loop's page in headless Chromium, its scripts under their policies: the counts change without a
    reload, a waiting review replaces the progress, Approve records it, the page goes back to progress, and
    when the loop ends by itself the page shows its last run, with nothing to decide."""
    import threading

    from headless import launched_chromium
    from playwright.sync_api import expect
    from test_review_web import FTS, RUN_ID, SORT
    from test_review_web import project as review_project

    from mcpipechekr.artifacts import RunDir
    from mcpipechekr.review.bugs import approved_bugs
    from mcpipechekr.review.decision import approved_report

    project = review_project.__wrapped__(tmp_path)  # the review tests' run: two server bugs, one agent bug
    config = load_config(project / "config.yaml", environ={})
    decided: list[object] = []
    with (
        loop_page(config, Console(file=io.StringIO()), enabled=True) as loop,
        launched_chromium("the loop's review page test") as browser,
    ):
        assert loop is not None
        view = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        view.on("pageerror", lambda error: errors.append(str(error)))
        view.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        loop.progress.at(RUN_ID, 1)
        view.goto(loop.server.url, timeout=30_000)
        assert view.locator("#phase").inner_text() == "idle"
        with progress.Activity("phase 1", total=3) as phase1:
            phase1.started()
            phase1.finished()
            phase1.started()
            # only the page's own poll can change it: no reload happens here
            expect(view.locator("#counts")).to_have_text("1/3 done, 1 running, 0 failed", timeout=10_000)
            assert view.locator("#phase").inner_text() == "phase 1"
            assert view.locator("#run").inner_text() == f"{RUN_ID} (iteration 1)"

        waiting = threading.Thread(
            target=lambda: decided.append(loop.review(RunDir(project / "runs" / RUN_ID)))
        )
        waiting.start()
        view.locator(f'input.pick[value="{SORT}"]').wait_for(timeout=10_000)  # the poll saw it and reloaded
        assert view.title() == f"Review of {RUN_ID}"
        view.locator(f'input.pick[value="{FTS}"]').check()
        view.locator("#approve").click()
        waiting.join(timeout=30)
        assert not waiting.is_alive() and len(decided) == 1
        view.locator("#progress").wait_for(timeout=10_000)  # back to the progress after the decision

        # the loop ends by itself: the watched page is given time to show how, before the server stops
        reason = f"{RUN_ID} has no server-side bug left to fix"
        ending = threading.Thread(target=lambda: loop.ended(RunDir(project / "runs" / RUN_ID), reason))
        ending.start()
        view.locator("#ended").wait_for(timeout=10_000)
        ending.join(timeout=10)
        assert not ending.is_alive() and loop.server.ended_shown.is_set()
        assert view.title() == f"The loop ended after {RUN_ID}"
        assert f"The loop ended: {reason}." in view.locator("#ended").inner_text()
        assert view.locator("input.pick").count() == 0 and view.locator("#decision").count() == 0
        ended = json.loads(get(loop, "/api/progress")[1])
        assert (ended["phase"], ended["ended"]) == ("ended", reason)
        status, body, _ = get(loop, "/api/run")
        assert status == 409 and reason in body
        assert errors == []  # no script refused by the policy, no failed request
    review, report = approved_report(RunDir(project / "runs" / RUN_ID))
    assert [bug.id for bug in approved_bugs(review, report)] == [FTS]
