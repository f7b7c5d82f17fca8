"""The Phase 1 progress display: attempts done, running and failed, and tokens so far.

On a terminal it is one live status line (rich) above a line per finished
attempt; elsewhere (CI logs, pipes) only the lines per finished attempt are
printed, so logs stay readable.
"""

from __future__ import annotations

from rich.console import Console
from rich.live import Live
from rich.text import Text

from mcpipechekr.runners.engine import ENDED, Attempt, Phase1State

_STYLE = {
    "completed": "green",
    "error": "red",
    "timeout": "yellow",
    "incomplete": "yellow",
    "errored": "magenta",
}


class Phase1Progress:
    """Receives `update(state, attempt)` from the engine; `attempt` is set when one just finished."""

    def __init__(self, console: Console):
        self.console = console
        self._live: Live | None = None
        if console.is_terminal:
            self._live = Live(
                Text("phase 1: starting"), console=console, transient=True, refresh_per_second=4
            )
            self._live.start()

    def update(self, state: Phase1State, attempt: Attempt | None) -> None:
        if attempt is not None and attempt.trace is not None:
            done = state.count(*ENDED)
            line = Text(f"[{done}/{len(state.attempts)}] {attempt.label}: ")
            line.append(attempt.state, style=_STYLE.get(attempt.state, ""))
            line.append(f", {attempt.tokens:,} tokens")
            self.console.print(line, soft_wrap=True)
        if self._live is not None:
            self._live.update(Text(f"phase 1: {state.summary()}"))

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
