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
