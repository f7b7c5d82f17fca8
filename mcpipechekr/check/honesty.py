"""Annotation honesty: does a tool do what its hints promise, as far as `check` can see?

`check` decides what it may call from the annotations (`CheckContext.may_call`),
so a tool annotated `readOnlyHint: true` that writes is called by `check`, by
`baseline` and by every client that trusts the hint. The MCP specification
defines the hints (schema, ToolAnnotations):

- `readOnlyHint`: "If true, the tool does not modify its environment."
  PC-12 snapshots what the server can write that check can see
  (check/footprint.py) around PC-10's calls of each tool, and a tool annotated
  read-only whose calls created, deleted or modified an entry is a FAIL naming
  the paths. Watched: the server's working folder (its `cwd`, else the folder
  check runs in) and the folders and files its command line and environment
  name (check/sources.py's `server_values`); not watched: check's own
  folders (findings home, runs, the server's log), caches and byte code.
  Before the first tool, a snapshot around a tools/list tells what the server
  changes on any request (a log of its own): those paths are not held against
  a tool.
- `idempotentHint`: "If true, calling the tool repeatedly with the same
  arguments will have no additional effect on its environment." PC-13 calls a
  tool annotated so a second time, right after PC-10's successful call and
  with the same arguments, and compares the answers. What varies between two
  honest calls is masked first: ISO dates and times, clock times, epoch
  numbers, durations ("took 12 ms"), UUIDs and long hex ids, and any JSON
  field whose key names a time or a request id. An answer that still differs
  is a WARN showing the first difference: a counter that moves or a value
  drawn anew means a retry does not get the same answer, and often that the
  call changed state. A WARN, not a FAIL: the hint speaks of effects, and the
  masking errs towards silence, since a false finding costs more than a
  missed one.

The second call goes only to a tool `check` may call anyway (it was just
called); a tool annotated idempotent that may change state and is not opted in
is never called, twice or once.

Blind spots: only PC-10's calls are watched (not the functional cases nor the
bad-argument probes); a server elsewhere (a URL check did not start) has no
folder check can see; a write outside the watched folders, into the part a
partial snapshot did not reach, or by the server in the background during a
tool's calls (attributed to that tool) is missed or misplaced; a tool whose
calls restarted the server is not judged, since a start may write.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import mcp_types
import orjson
import pydantic
from mcp.shared.exceptions import MCPError

from mcpipechekr.artifacts.check_report import CheckStatus
from mcpipechekr.check.answers import one_line
from mcpipechekr.check.context import SLOW_TO_CALL_AGAIN_MS, CheckContext
from mcpipechekr.check.footprint import Snapshotter, compare, watch_roots
from mcpipechekr.check.honesty_watch import HonestyWatch, ToolWatch
from mcpipechekr.check.reach import ToolReach
from mcpipechekr.errors import ServerHalt
from mcpipechekr.server.connection import StructuredContentMismatch

SHOWN_PATHS = 5
"""Paths a verdict's reason names; the details list them all."""

Verdicts = list[tuple[str, CheckStatus, str, dict[str, Any]]]
"""(check id, status, reason, details) for the protocol layer to record."""


def start_watch(ctx: CheckContext) -> HonestyWatch:
    """Decide what to watch, take the first snapshot and learn what the server changes on its own."""
    server = ctx.config.server
    launch: list[str | Path] = []
    if server.command:
        launch.append(server.cwd or Path.cwd())
    elif server.start is not None:
        launch.append(server.start.cwd or Path.cwd())
    else:
        blind = "the server runs elsewhere (a URL check did not start): no folder to watch"
        watch = HonestyWatch(None, blind=blind)
        ctx.honesty = watch
        return watch
    pool = ctx.value_pool()
    named = [found.value for found in [*pool.directories, *pool.files] if "(inside" not in found.source]
    excluded = [ctx.config.paths.home, ctx.config.paths.runs]
    log_path = getattr(ctx.server, "log_path", None)
    if log_path is not None:
        excluded.append(log_path)
    excluded_resolved = [str(Path(path).resolve()) for path in excluded]
    roots = watch_roots([*launch, *named], excluded)
    watch = HonestyWatch(Snapshotter(roots, excluded_resolved))
    ctx.honesty = watch
    if not roots:
        watch.snapshotter, watch.blind = None, "none of the server's folders exists here"
        return watch
    if not any(claims_read_only(ctx, tool) for tool in ctx.tools):
        return watch  # no tool promises read-only: nothing to hold to its word
    ctx.step("PC-12 snapshot of the server's folders")
    first = watch.snapshotter.take()  # type: ignore[union-attr]
    try:
        ctx.server.request(
            "during tools/list", lambda client: client.list_tools(cache_mode="refresh"), ctx.call_timeout_s
        )
    except (ServerHalt, MCPError):
        pass  # PC-10 will meet a dead server; a refusal changes nothing here
    watch.last = watch.snapshotter.take()  # type: ignore[union-attr]
    watch.noise = compare(first, watch.last).paths()
    return watch


@contextmanager
def watching(ctx: CheckContext, tool: mcp_types.Tool, reach: ToolReach) -> Iterator[None]:
    """Around one tool's PC-10 calls: snapshot before and after, and the idempotence re-call inside.

    Only a tool annotated read-only is watched; the snapshot after one is the
    one before the next, since nothing else talks to the server in between
    (after any other tool, the next watched one takes a fresh one).
    """
    watch = ctx.honesty
    claims = claims_read_only(ctx, tool)
    if watch is None or watch.snapshotter is None or not claims:
        yield
        _repeat_if_idempotent(ctx, tool, reach)
        if watch is not None:
            watch.last = None  # an opted-in tool may write: the next read-only tool starts afresh
        return
    before = watch.last or watch.snapshotter.take()
    yield
    _repeat_if_idempotent(ctx, tool, reach)
    after = watch.snapshotter.take()
    watch.last = after
    seen = watch.tools.setdefault(tool.name, ToolWatch())
    seen.windows += 1
    seen.partial |= before.partial or after.partial
    seen.halted |= reach.halted
    seen.snapshot_ms += after.ms
    seen.changes.merge(compare(before, after).without(watch.noise))


def _repeat_if_idempotent(ctx: CheckContext, tool: mcp_types.Tool, reach: ToolReach) -> None:
    """PC-13's second call: the same arguments as the successful one, compared with its answer."""
    annotations = tool.annotations
    if annotations is None or annotations.idempotent_hint is not True or ctx.honesty is None:
        return
    seen = ctx.honesty.tools.setdefault(tool.name, ToolWatch())
    decisive = reach.decisive
    if seen.repeat is not None or reach.status != "reached" or decisive is None or decisive.result is None:
        return
    if decisive.ms > SLOW_TO_CALL_AGAIN_MS:
        seen.repeat = (
            "SKIP",
            f"not called twice: its first call took {decisive.ms / 1000:.1f} s (a long-running operation "
            f"is not run again to compare answers; the bound is {SLOW_TO_CALL_AGAIN_MS / 1000:g} s)",
            {},
        )
        return
    arguments = decisive.candidate.arguments
    ctx.step(f"PC-13 calling {tool.name} again")
    try:
        again = ctx.server.call_tool(tool.name, arguments, ctx.call_timeout_s)
    except ServerHalt as halt:
        # PC-10 judges crashes and hangs; a second call that times out on a loaded machine is no
        # evidence about idempotence, so it is not a finding of its own
        seen.repeat = (
            "SKIP",
            f"not compared: the second call halted the server: {one_line(str(halt))}",
            {},
        )
        ctx.recover()
        return
    except (pydantic.ValidationError, MCPError, StructuredContentMismatch) as exc:
        seen.repeat = ("SKIP", f"not compared: the second call failed: {one_line(str(exc))}", {})
        return
    details: dict[str, Any] = {"arguments": arguments}
    if again.is_error:
        text = " ".join(block.text for block in again.content if isinstance(block, mcp_types.TextContent))
        seen.repeat = ("SKIP", f"not compared: the second call answered isError: {one_line(text)}", details)
        return
    difference = first_difference(decisive.result, again)
    if difference is None:
        seen.repeat = ("PASS", "two identical calls got the same answer (times and ids aside)", details)
        return
    where, first, second = difference
    details.update({"where": where, "first": first, "second": second})
    seen.repeat = (
        "WARN",
        f"annotated idempotentHint: true, but two identical calls answered differently at {where}: "
        f"{first} then {second} (not a time or an id): a retry gets another answer",
        details,
    )


def claims_read_only(ctx: CheckContext, tool: mcp_types.Tool) -> bool:
    """Annotated `readOnlyHint: true`, or trusted as read-only by the server's author (`check.read_only`):
    either way check calls it as a tool that changes nothing, so its calls are held to that."""
    annotated = tool.annotations is not None and tool.annotations.read_only_hint is True
    return annotated or tool.name in ctx.read_only


def _promise(ctx: CheckContext, tool: mcp_types.Tool) -> str:
    if tool.annotations is not None and tool.annotations.read_only_hint is True:
        return 'annotated readOnlyHint: true ("does not modify its environment")'
    return "trusted as read-only by its author (check.read_only)"


def honesty_verdicts(ctx: CheckContext, tool: mcp_types.Tool) -> Verdicts:
    """PC-12 for a tool annotated or trusted read-only, PC-13 for one annotated idempotent; none for
    other tools."""
    annotations = tool.annotations
    out: Verdicts = []
    reach = ctx.coverage.get(tool.name)
    watch = ctx.honesty
    seen = watch.tools.get(tool.name) if watch is not None else None
    if claims_read_only(ctx, tool):
        out.append(("PC-12", *_read_only_verdict(watch, seen, reach, _promise(ctx, tool))))
    if annotations is not None and annotations.idempotent_hint is True:
        if seen is not None and seen.repeat is not None:
            out.append(("PC-13", *seen.repeat))
        else:
            out.append(("PC-13", "SKIP", _not_repeated(reach), {}))
    return out


def _not_repeated(reach: ToolReach | None) -> str:
    if reach is None:
        return "not called"
    if reach.status == "not_called":
        return reach.reason
    if reach.status == "reached":
        return "not compared: its answer was not one the client could read (see PC-11)"
    return f"not called twice: PC-10 did not reach it ({reach.status.replace('_', ' ')})"


def _read_only_verdict(
    watch: HonestyWatch | None, seen: ToolWatch | None, reach: ToolReach | None, promise: str
) -> tuple[CheckStatus, str, dict[str, Any]]:
    if reach is None or not reach.attempts:
        return "SKIP", (reach.reason if reach is not None and reach.reason else "not called"), {}
    if watch is None or watch.snapshotter is None:
        return "SKIP", watch.blind if watch is not None else "not watched", {}
    if seen is None or not seen.windows:
        return "SKIP", "its calls were not watched", {}
    roots = watch.snapshotter.roots
    details: dict[str, Any] = {
        "watched": roots,
        "partial": seen.partial,
        "created": seen.changes.created,
        "deleted": seen.changes.deleted,
        "modified": seen.changes.modified,
        "ignored_as_the_servers_own": sorted(watch.noise),
        "snapshot_ms": round(seen.snapshot_ms, 1),
    }
    partial = (
        f"; the snapshot was partial (more than {_bound(watch)} entries): changes beyond it are not seen"
        if seen.partial
        else ""
    )
    if seen.halted:
        return "SKIP", "not judged: its calls restarted the server, and a start may write", details
    calls = len(reach.attempts)
    if not seen.changes:
        where = ", ".join(roots)
        return "PASS", f"{calls} call(s) changed nothing under {where}{partial}", details
    said = []
    for label, paths in (
        ("created", seen.changes.created),
        ("deleted", seen.changes.deleted),
        ("modified", seen.changes.modified),
    ):
        if paths:
            more = f" and {len(paths) - SHOWN_PATHS} more" if len(paths) > SHOWN_PATHS else ""
            said.append(f"{label} {', '.join(paths[:SHOWN_PATHS])}{more}")
    return (
        "FAIL",
        f"{promise}, but its {calls} call(s) {'; '.join(said)}{partial}",
        details,
    )


def _bound(watch: HonestyWatch) -> int:
    from mcpipechekr.check import footprint

    snapshotter = watch.snapshotter
    return snapshotter.max_entries if snapshotter and snapshotter.max_entries else footprint.MAX_ENTRIES


# --- comparing two answers ------------------------------------------------------------------------

VOLATILE = re.compile(
    r"""
    \d{4}-\d{2}-\d{2}(?:[T\s]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?  # ISO date(-time)
    | \b\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?\b                                           # a clock time
    | \b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b    # a UUID
    | \b[0-9a-fA-F]{16,}\b                                                               # a long hex id
    | \b1\d{9}(?:\d{3}){0,3}(?:\.\d+)?\b                                                 # epoch s, ms, µs, ns
    | \b\d+(?:\.\d+)?\s?(?:ns|µs|us|ms|s|secs?|seconds?|milliseconds?|microseconds?|nanoseconds?
        |m|mins?|minutes?|h|hrs?|hours?|days?)\b                                        # a duration
    """,
    re.VERBOSE | re.IGNORECASE,
)
"""What two honest answers may differ in: times, dates, durations and ids."""

VOLATILE_WORDS = frozenset(
    {
        "time", "times", "timestamp", "date", "datetime", "stamp", "at", "ts", "now", "clock",
        "elapsed", "duration", "took", "latency", "uptime", "ms", "secs", "seconds",
        "nonce", "etag", "expires", "expiry", "age", "uuid",
    }
)  # fmt: skip
"""Words of a JSON key whose value is a time, a duration or a per-request token (`created_at`, `tookMs`)."""
ID_OWNERS = frozenset({"request", "trace", "span", "correlation", "session"})
"""`request_id`, `traceId`, …: ids that name the call, not the data."""

SHOWN_TEXT = 80


def first_difference(
    first: mcp_types.CallToolResult, second: mcp_types.CallToolResult
) -> tuple[str, str, str] | None:
    """Where two answers differ beyond times and ids (a JSON pointer or a line), and both values; or None.

    The structured content is compared when both have it; otherwise the
    content blocks one by one, a text block as JSON when both parse, else line
    by line.
    """
    if first.structured_content is not None and second.structured_content is not None:
        pair = first.structured_content, second.structured_content
        return _json_difference(*pair, "/structuredContent", None)
    if len(first.content) != len(second.content):
        return "/content", f"{len(first.content)} block(s)", f"{len(second.content)} block(s)"
    for index, (one, two) in enumerate(zip(first.content, second.content, strict=True)):
        where = f"/content/{index}"
        if isinstance(one, mcp_types.TextContent) and isinstance(two, mcp_types.TextContent):
            found = _text_difference(one.text, two.text, where)
        else:
            dumped = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in (one, two)]
            found = _json_difference(dumped[0], dumped[1], where, None)
        if found is not None:
            return found
    return None


def _text_difference(one: str, two: str, where: str) -> tuple[str, str, str] | None:
    try:
        return _json_difference(orjson.loads(one), orjson.loads(two), where, None)
    except orjson.JSONDecodeError:
        pass
    lines_one, lines_two = one.splitlines(), two.splitlines()
    if len(lines_one) != len(lines_two):
        return f"{where} (text)", f"{len(lines_one)} line(s)", f"{len(lines_two)} line(s)"
    for number, (a, b) in enumerate(zip(lines_one, lines_two, strict=True), start=1):
        if _masked(a) != _masked(b):
            return f"{where} line {number}", _shown(a), _shown(b)
    return None


def _json_difference(one: Any, two: Any, where: str, key: str | None) -> tuple[str, str, str] | None:
    if key is not None and _volatile_key(key):
        return None
    if isinstance(one, dict) and isinstance(two, dict):
        if set(one) != set(two):
            return where, _shown(sorted(one)), _shown(sorted(two))
        for name in one:
            found = _json_difference(one[name], two[name], f"{where}/{_escaped(name)}", str(name))
            if found is not None:
                return found
        return None
    if isinstance(one, list) and isinstance(two, list):
        if len(one) != len(two):
            return where, f"{len(one)} item(s)", f"{len(two)} item(s)"
        for index, (a, b) in enumerate(zip(one, two, strict=True)):
            found = _json_difference(a, b, f"{where}/{index}", key)
            if found is not None:
                return found
        return None
    if isinstance(one, str) and isinstance(two, str):
        return None if _masked(one) == _masked(two) else (where, _shown(one), _shown(two))
    if _number(one) and _number(two):
        if one == two or (_epoch_like(one) and _epoch_like(two)):
            return None
        return where, _shown(one), _shown(two)
    return None if one == two else (where, _shown(one), _shown(two))


def _volatile_key(key: str) -> bool:
    words = [word.lower() for word in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", key)]
    if VOLATILE_WORDS.intersection(words):
        return True
    pairs = zip(words, words[1:], strict=False)
    return any(word in ID_OWNERS and following == "id" for word, following in pairs)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _epoch_like(value: float) -> bool:
    """Seconds, milliseconds, microseconds or nanoseconds since 1970 for a date between 2001 and 2033."""
    if not math.isfinite(value) or value <= 0:
        return False
    return any(1e9 <= value / scale < 2e9 for scale in (1, 1e3, 1e6, 1e9))


def _masked(text: str) -> str:
    return VOLATILE.sub("\x00", text)


def _escaped(name: object) -> str:
    return str(name).replace("~", "~0").replace("/", "~1")


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value, default=str).decode()
    text = repr(text) if isinstance(value, str) else text
    return text if len(text) <= SHOWN_TEXT else text[: SHOWN_TEXT - 1] + "…"


__all__ = ["HonestyWatch", "first_difference", "honesty_verdicts", "start_watch", "watching"]
