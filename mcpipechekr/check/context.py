"""What every check layer shares: the live server, its tools, the timeouts, and the verdicts so far.

Layers append `CheckResult`s through `ctx.record`, and every tool response any
layer observes through `ctx.observe`, so the quality layer can size responses
the other layers already paid for instead of calling the tools again.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import mcp_types

from mcpipechekr.artifacts.check_report import CheckResult, CheckStatus, Layer
from mcpipechekr.config import Config
from mcpipechekr.errors import ServerHalt
from mcpipechekr.server.lifecycle import ServerUnderTest


@dataclass
class ObservedResponse:
    """A tool result some layer received, kept for the quality layer."""

    tool: str
    source: str  # "generated" or a case id
    result: mcp_types.CallToolResult


@dataclass
class CheckContext:
    """State of one `check` run."""

    config: Config
    server: ServerUnderTest
    call_timeout_s: float
    tools: list[mcp_types.Tool] = field(default_factory=list)
    results: list[CheckResult] = field(default_factory=list)
    responses: list[ObservedResponse] = field(default_factory=list)
    opted_in: set[str] = field(default_factory=set)
    """Tools the cases file explicitly allows to be called although they may change state."""
    server_lost: str | None = None
    """Set when the server halted and could not be restarted: later checks are SKIPs with this reason."""
    progress: Callable[[str], None] | None = None
    """Told what is running now (a check id, a tool call), for a progress display; None: silent."""

    def record(
        self,
        check_id: str,
        name: str,
        layer: Layer,
        group: str,
        status: CheckStatus,
        reason: str = "",
        *,
        tool: str | None = None,
        duration_ms: float = 0.0,
        details: dict[str, Any] | None = None,
    ) -> CheckResult:
        result = CheckResult(
            id=check_id,
            name=name,
            layer=layer,
            group=group,
            status=status,
            reason=self.config.redactor.redact(reason),
            tool=tool,
            duration_ms=duration_ms,
            details=details or {},
        )
        self.results.append(result)
        return result

    def observe(self, tool: str, source: str, result: mcp_types.CallToolResult) -> None:
        self.responses.append(ObservedResponse(tool, source, result))

    def step(self, text: str) -> None:
        """Tell the progress display what runs now."""
        if self.progress is not None:
            self.progress(text)

    def recover(self) -> bool:
        """After a halt (a crash or a hang the caller has recorded), restart the server so checks go on.

        Returns False, with `server_lost` set, when it cannot be restarted; every
        later check should then be a SKIP with that reason (and the run fails,
        since the halt itself was recorded as a FAIL).
        """
        if self.server_lost is not None:
            return False
        self.step("restarting the server")
        try:
            self.server.restart()
        except ServerHalt as again:
            self.server_lost = f"server could not be restarted: {str(again).splitlines()[0]}"
            return False
        return True

    @contextmanager
    def timed(self) -> Iterator[dict[str, float]]:
        """`with ctx.timed() as t: …` then `t["ms"]`: wall time of the block in milliseconds."""
        box: dict[str, float] = {}
        started = time.perf_counter()
        try:
            yield box
        finally:
            box["ms"] = (time.perf_counter() - started) * 1000

    def may_call(self, tool: mcp_types.Tool) -> tuple[bool, str]:
        """Whether a generic probe may call this tool, and why not.

        Destructive or not-read-only tools are called only when the cases file
        opts them in. A tool without annotations is called unless its name starts
        with a verb that changes state (`delete_…`, `send_…`); the protocol layer
        warns about the missing annotations separately.
        """
        annotations = tool.annotations
        if tool.name in self.opted_in:
            return True, ""
        if annotations is not None and annotations.destructive_hint:
            return False, "annotated destructiveHint: true; opt it in from the cases file to call it"
        if annotations is not None and annotations.read_only_hint is False:
            return False, "annotated readOnlyHint: false; opt it in from the cases file to call it"
        if annotations is None and _first_word(tool.name) in MUTATING_VERBS:
            return False, (
                f"no annotations and its name starts with '{_first_word(tool.name)}', which changes "
                "state; annotate it readOnlyHint: true or opt it in from the cases file"
            )
        return True, ""


MUTATING_VERBS = frozenset(
    "add append archive cancel clear create delete destroy disable drop edit enable erase execute insert "
    "kill merge modify move post publish purge push put remove rename replace reset restart revoke run "
    "send set shutdown stop submit terminate truncate update upload write".split()
)
"""First words of tool names that suggest a state change; used only when a tool declares no annotations."""


def _first_word(name: str) -> str:
    words = re.split(r"[_\-./]|(?<=[a-z])(?=[A-Z])", name)
    return words[0].lower() if words else ""
