"""What every check layer shares: the live server, its tools, the timeouts, and the verdicts so far.

Layers append `CheckResult`s through `ctx.record`, and every tool response any
layer observes through `ctx.observe`, so the quality layer can size responses
the other layers already paid for instead of calling the tools again.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import mcp_types

from mcpipechekr.artifacts.check_report import CheckResult, CheckStatus, Layer
from mcpipechekr.check.answers import one_line
from mcpipechekr.check.honesty_watch import HonestyWatch
from mcpipechekr.check.reach import ToolReach
from mcpipechekr.check.sources import ValuePool, server_values
from mcpipechekr.config import Config
from mcpipechekr.errors import ServerHalt
from mcpipechekr.server.annotations import annotated_writes, write_risk
from mcpipechekr.server.lifecycle import ServerUnderTest

SLOW_TO_CALL_AGAIN_MS = 2000.0
"""A tool whose PC-10 answer took longer than this is not called a second time (PC-13's comparison,
PC-58's raw look): a long-running operation would be paid for twice to look at one answer."""


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
    """One definition per distinct name, the first tools/list gave (`use_tools`): per-tool checks run once."""
    listed_names: list[str] = field(default_factory=list)
    """Every name as tools/list gave it, duplicates included, for the check that judges names (PC-04)."""
    results: list[CheckResult] = field(default_factory=list)
    responses: list[ObservedResponse] = field(default_factory=list)
    opted_in: set[str] = field(default_factory=set)
    """Tools the cases file explicitly allows to be called although they may change state."""
    server_lost: str | None = None
    """Set when the server halted and could not be restarted: later checks are SKIPs with this reason."""
    progress: Callable[[str], None] | None = None
    """Told what is running now (a check id, a tool call), for a progress display; None: silent."""
    coverage: dict[str, ToolReach] = field(default_factory=dict)
    """What argument synthesis got from each tool it considered (check/synthesis.py), by tool name."""
    values: ValuePool | None = None
    """Values synthesis may offer: the server's paths, its resources, results of tools; see value_pool()."""
    honesty: HonestyWatch | None = None
    """Snapshots around PC-10's calls that hold annotations to their word (check/honesty.py); None: off."""
    read_only: set[str] = field(default_factory=set)
    """Tools the server's author trusts to only read (config's check.read_only, --trust-read-only)."""

    def __post_init__(self) -> None:
        self.read_only |= set(self.config.check.read_only)

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
            details=self.config.redactor.redact(details or {}),
        )
        self.results.append(result)
        return result

    def use_tools(self, listed: list[mcp_types.Tool]) -> None:
        """Keep the listed tools, the first definition of a duplicated name only.

        A name listed twice is one FAIL of its own (PC-04); checking both
        definitions would give two verdicts the same id (`PC-03:NAME` twice), and
        a client that calls the name reaches one definition anyway.
        """
        self.listed_names = [tool.name for tool in listed]
        first: dict[str, mcp_types.Tool] = {}
        for tool in listed:
            first.setdefault(tool.name, tool)
        self.tools = list(first.values())

    def value_pool(self) -> ValuePool:
        """The pool of values synthesis draws from, started from the server's command line and environment."""
        if self.values is None:
            self.values = server_values(self.config.server)
        return self.values

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
            self.server_lost = f"server could not be restarted: {one_line(str(again))}"
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
        """Whether a check may call this tool, and why not.

        Only a tool annotated `readOnlyHint: true` and not `destructiveHint: true`
        is called on its own (`server.annotations.write_risk`, with the MCP
        defaults for missing hints), one the server's author trusts to only
        read (`read_only`, unless its annotations say it writes), or one the
        cases file lists under `opt_in`. The name plays no part: an unannotated
        `wipe_all_notes` and an unannotated `lookup` are both skipped, and the
        reason says how to allow the call.
        """
        if tool.name in self.opted_in:
            return True, ""
        risk = write_risk(tool, trusted=tool.name in self.read_only)
        if risk is None:
            return True, ""
        opt_in = (
            f"list it under opt_in in the cases file (tool: {tool.name}, reason: …), with cases whose "
            "cleanup undoes what it does"
        )
        unsaid = tool.annotations is None or tool.annotations.read_only_hint is None
        annotate = "annotate it readOnlyHint: true if it only reads"
        if unsaid and annotated_writes(tool) is None and tool.name not in self.read_only:
            annotate += f" (or trust it: --trust-read-only {tool.name})"
        advice = f"{annotate}, or {opt_in}" if unsaid else opt_in
        return False, f"{risk}, so it may change state; to call it, {advice}"


async def all_pages(fetch: Callable[[str | None], Awaitable[Any]], field: str) -> list[Any]:
    """Every item of a paginated list (`fetch(cursor)` for each page), at most 100 pages: a paginator
    that never ends cannot hang the check."""
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(100):
        page = await fetch(cursor)
        items.extend(getattr(page, field))
        cursor = page.next_cursor
        if not cursor:
            break
    return items
