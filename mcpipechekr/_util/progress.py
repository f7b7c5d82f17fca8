"""Live progress: one status line on stderr while something long runs (traces, lint, evaluation, a fix agent).

A person waiting on a loop that may run for an hour needs to see that it
runs, what it runs, and for how long yet: attempts done of all, running and
failed, elapsed time, an estimate of the rest, and the latest thing the work
said (a fix agent's last output line). That is one live line, redrawn in
place, on stderr.

It is shown only where it can be redrawn and does not mix into results: when
both stdout and stderr are terminals that can move the cursor (not `TERM=dumb`)
and `--quiet` was not given (`set_quiet`). Elsewhere (CI logs, pipes, JSON on
stdout) nothing is drawn and the permanent lines the steps print are the whole
output. While the line is up, whatever is printed to stdout or stderr clears it
first and it is drawn again below (`_LiveLine`), so each stream keeps its own
text. rich's `Live` is not used: doit wraps `sys.stdout` around every action,
and rich's redirection through its console then writes into itself.

One display at a time: an activity started while another is up only names
itself in that one's line while it runs (the lint before the loop's traces),
so nested steps never fight over the line. Steps do not hold the activity:
they call `detail(...)`, which tells the current one, if any, and is
otherwise a no-op; so the library works the same with no display at all.
"""

from __future__ import annotations

import atexit
import sys
import threading
import time
from dataclasses import dataclass
from types import TracebackType
from typing import IO, Any

from rich.console import Console

from mcpipechekr._util.console import console, err_console

__all__ = ["Activity", "Snapshot", "current", "detail", "eta_text", "is_live", "set_quiet"]

_quiet = False
_current: Activity | None = None
_lock = threading.Lock()


def set_quiet(quiet: bool) -> None:
    """`--quiet`: no live display for the rest of this process, or until set again."""
    global _quiet
    _quiet = quiet


def is_live(out: Console = console, err: Console = err_console) -> bool:
    """Whether a live line can be drawn: both streams terminals, not dumb ones, and not `--quiet`."""
    return not _quiet and all(c.is_terminal and not c.is_dumb_terminal for c in (out, err))


def current() -> Activity | None:
    """The activity being shown, if any."""
    return _current


def detail(text: str) -> None:
    """Tell the current activity what is happening now (its last output line, a restart); else nothing."""
    activity = _current
    if activity is not None:
        activity.detail(text)


def eta_text(elapsed_s: float, done: int, total: int | None) -> str:
    """`ETA 1:05` from the pace so far; empty before the first item is done or without a total."""
    if not total or done <= 0 or done >= total:
        return ""
    return f"ETA {_clock(elapsed_s / done * (total - done))}"


def _clock(seconds: float) -> str:
    whole = int(round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


@dataclass(frozen=True)
class Snapshot:
    """An activity's counts and detail read together, for a display other than the line (the review page)."""

    label: str
    done: int
    running: int
    failed: int
    total: int | None
    detail: str
    elapsed_s: float


class Activity:
    """A live line for one piece of work: `with Activity("phase 1", total=8) as shown: shown.finished()`.

    Counts are kept whether or not the line is drawn, so `line()` is what it
    would show (tests read it). Safe to update from several threads (doit runs
    the traces of an iteration in threads).
    """

    def __init__(self, label: str, *, total: int | None = None, err: Console = err_console) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self.running = 0
        self.failed = 0
        self._detail = ""
        self._err = err
        self._started = time.monotonic()
        self._live: _LiveLine | None = None
        self._owner = False
        self._host: Activity | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> Activity:
        global _current
        self._started = time.monotonic()
        with _lock:
            if _current is not None:  # another activity holds the line: it names this one while it runs
                self._host = _current
                self._host.detail(self.label)
                return self
            _current = self
            self._owner = True
        if is_live(err=self._err):
            self._live = _LiveLine(self.line, width=self._err.width)
            self._live.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        global _current
        if self._live is not None:
            self._live.stop()
            self._live = None
        if self._owner:
            with _lock:
                _current = None
            self._owner = False
        elif self._host is not None:
            if self._host._detail == self.label:
                self._host.detail("")
            self._host = None

    def started(self) -> None:
        """One item started."""
        with self._lock:
            self.running += 1

    def finished(self, *, failed: bool = False) -> None:
        """One started item ended (`failed`: without its result)."""
        with self._lock:
            self.running = max(0, self.running - 1)
            self.done += 1
            self.failed += failed

    def skipped(self) -> None:
        """One item of the total needs no work (up to date): the total shrinks."""
        with self._lock:
            if self.total:
                self.total -= 1

    def detail(self, text: str) -> None:
        """What is happening now, shown after the counts (one line: the rest is cut)."""
        self._detail = " ".join(text.split())

    def snapshot(self) -> Snapshot:
        """The counts as one consistent reading: the review page shows them while the line shows `line()`."""
        with self._lock:
            return Snapshot(
                label=self.label,
                done=self.done,
                running=self.running,
                failed=self.failed,
                total=self.total,
                detail=self._detail,
                elapsed_s=self.elapsed_s,
            )

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self._started

    def line(self) -> str:
        """`phase 1: 3/8 done, 4 running, 1 failed · 0:42 · ETA 1:05 · <detail>`: what the display shows."""
        elapsed = self.elapsed_s
        with self._lock:
            done, total, running, failed = self.done, self.total, self.running, self.failed
        parts = []
        if total is not None:
            parts.append(f"{done}/{total} done, {running} running, {failed} failed")
        parts.append(_clock(elapsed))
        if eta := eta_text(elapsed, done, total):
            parts.append(eta)
        if self._detail:
            parts.append(self._detail)
        return f"{self.label}: " + " · ".join(parts)


_CLEAR = "\r\x1b[2K"  # to the line's start, and erase it


class _LiveLine:
    """A status line redrawn on stderr every quarter second; writes to stdout and stderr go above it.

    While it runs, `sys.stdout` and `sys.stderr` are proxies that erase the line before passing text on
    to the streams they replaced, and the line is drawn again only after a complete line of output, so
    no text is ever overwritten.
    """

    def __init__(self, text: Any, *, width: int, interval_s: float = 0.25) -> None:
        self._text = text
        self._width = max(20, width - 1)
        self._interval_s = interval_s
        self._lock = threading.RLock()
        self._drawn = False
        self._at_line_start = True
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="progress-line", daemon=True)
        self._saved: tuple[Any, Any] | None = None

    def start(self) -> None:
        self._saved = (sys.stdout, sys.stderr)
        self._stream = sys.stderr
        sys.stdout = _Proxy(self, sys.stdout)  # type: ignore[assignment]
        sys.stderr = _Proxy(self, sys.stderr)  # type: ignore[assignment]
        self._thread.start()
        atexit.register(self.stop)  # a task ended by Ctrl-C never reaches its reporter's end: clear here

    def stop(self) -> None:
        """Erase the line and give the streams back; again, it does nothing."""
        atexit.unregister(self.stop)
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)
        with self._lock:
            self._erase()
            if self._saved is not None:
                sys.stdout, sys.stderr = self._saved
                self._saved = None

    def write_through(self, stream: IO[str], text: str) -> int:
        with self._lock:
            self._erase()
            written = stream.write(text)
            stream.flush()
            if text:
                self._at_line_start = text.endswith("\n")
            return written

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            self._draw()

    def _draw(self) -> None:
        with self._lock:
            if not self._at_line_start or self._stop.is_set():
                return
            line = self._text()
            if len(line) > self._width:
                line = line[: self._width - 1] + "…"
            self._stream.write(_CLEAR + line)
            self._stream.flush()
            self._drawn = True

    def _erase(self) -> None:
        if self._drawn:
            self._stream.write(_CLEAR)
            self._stream.flush()
            self._drawn = False


class _Proxy:
    """A text stream that writes through a `_LiveLine` to the stream it replaced."""

    def __init__(self, live: _LiveLine, stream: IO[str]) -> None:
        self._live = live
        self._stream = stream

    def write(self, text: str) -> int:
        return self._live.write_through(self._stream, text)

    def flush(self) -> None:
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
