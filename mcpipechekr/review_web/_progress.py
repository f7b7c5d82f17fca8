"""What the loop's page shows while no review waits: the live progress line's counts, as `ProgressView`.

Nothing here counts. Phase 1 counts its attempts on the live display's current activity (graph/phase1.py's
trace targets call `started`/`finished` on it), the reporter opens an activity for each step that has
no display of its own (evaluate, fix), and the fix step tells it its agent's last line
(`progress.detail`); the page reads that same activity (`progress.current().snapshot()`), so it shows
exactly what the terminal's line shows, also where no line is drawn (a pipe, `--quiet`). The detail
comes from a fix agent that read the server's code and its output: it goes through the project's
redactor before it is served.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from mcpipechekr._util import progress
from mcpipechekr.review_web._api import ProgressView
from mcpipechekr.review_web._session import ReviewSession

MAX_DETAIL_CHARS = 500
"""The detail is one line for a status view; an agent printing a whole file in one line is cut."""


class LoopProgress:
    """The loop's place (run, iteration) as the loop sets it, and the current activity as it runs."""

    def __init__(self, redact: Callable[[str], str]) -> None:
        self._redact = redact
        self._lock = threading.Lock()
        self._run_id: str | None = None
        self._iteration = 0
        self._ended: str | None = None

    def at(self, run_id: str, iteration: int) -> None:
        """The loop started working on `run_id` (its `iteration`-th run)."""
        with self._lock:
            self._run_id, self._iteration = run_id, iteration

    def end(self, reason: str) -> None:
        """The loop has ended, for `reason` (the session summary's words): nothing runs any more."""
        with self._lock:
            self._ended = reason

    @property
    def ended(self) -> str | None:
        with self._lock:
            return self._ended

    def view(self, session: ReviewSession | None) -> ProgressView:
        """`GET /api/progress`: `review` while `session` waits for its decision, `ended` once the loop has,
        else the current activity."""
        with self._lock:
            run_id, iteration, ended = self._run_id, self._iteration, self._ended
        if ended is not None:
            return ProgressView(
                phase="ended", run_id=run_id, iteration=iteration, done=0, running=0, failed=0,
                total=None, detail=self._redact(ended), elapsed_s=0.0, review_pending=False,
                ended=self._redact(ended),
            )  # fmt: skip
        if session is not None and session.review is None:
            return ProgressView(
                phase="review", run_id=session.run_dir.run_id, iteration=iteration, done=0, running=0,
                failed=0, total=None, detail="", elapsed_s=0.0, review_pending=True,
            )  # fmt: skip
        activity = progress.current()
        if activity is None:
            return ProgressView(
                phase="idle", run_id=run_id, iteration=iteration, done=0, running=0, failed=0,
                total=None, detail="", elapsed_s=0.0, review_pending=False,
            )  # fmt: skip
        now = activity.snapshot()
        detail = self._redact(now.detail)
        if len(detail) > MAX_DETAIL_CHARS:
            detail = detail[: MAX_DETAIL_CHARS - 1] + "…"
        return ProgressView(
            phase=now.label, run_id=run_id, iteration=iteration, done=now.done, running=now.running,
            failed=now.failed, total=now.total, detail=detail, elapsed_s=round(now.elapsed_s, 1),
            review_pending=False,
        )  # fmt: skip
