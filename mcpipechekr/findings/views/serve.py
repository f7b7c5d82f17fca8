"""`mcpipechekr serve`: the findings as an MCP server (stdio), so a coding agent can check its own fix.

Four tools, each a thin call into the same library as the CLI:

- `list_findings` and `get_finding`: the sanitized findings as JSON (the
  `findings --format json` document); a missing, corrupt or incomplete index
  is the same "evidence unavailable" error the CLI exits 3 with;
- `generate_case`: writes a verification manifest, like `mcpipechekr generate`;
- `verify_fix`: runs a manifest's case against a server command or URL and
  records the result as advisory (origin `serve`: it moves nothing in the
  lifecycle), answering the report lines of `mcpipechekr verify`.

Failures come back as tool errors (`isError: true`) whose text is the CLI's
message, so an agent reads what a person would. The findings home is the one
in effect when the server starts ($MCPIPECHEKR_HOME, default .mcpipechekr/).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
import mcp_types
import pydantic
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from mcpipechekr.artifacts.findings import Finding
from mcpipechekr.check.cases import Expect
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.store import load_finding
from mcpipechekr.findings.promotion.promote import registered_findings, require_index
from mcpipechekr.findings.verification.generate import generate_manifest
from mcpipechekr.findings.verification.verify import verify_finding
from mcpipechekr.findings.views.render import STATE_ORDER, render
from mcpipechekr.server.target import resolve_server

T = TypeVar("T")

_READ_ONLY = mcp_types.ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=False)
_WRITES = mcp_types.ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)


def _answer(call: Callable[[], T]) -> T:
    """Run a library call; a user-facing error (exit 2 or 3 on the CLI) becomes a tool error with its text."""
    try:
        return call()
    except click.ClickException as exc:
        raise ToolError(exc.format_message()) from None


def build_server(home: Home) -> MCPServer:
    """The findings server for one home; `.run()` serves it over stdio."""
    app = MCPServer(
        "mcpipechekr-findings",
        instructions="Findings of recurring MCP server failures: list them, generate a verification case "
        "for one, fill its placeholders, then verify your fix (three greens in a row close a finding).",
    )

    @app.tool(annotations=_READ_ONLY)
    def list_findings(state: str | None = None) -> str:
        """The findings as JSON (class, fix hint, severity, rates, argument shapes); optionally one state.

        `state`: open, fix-claimed, verifying or closed.
        """
        if state is not None and state not in STATE_ORDER:
            raise ToolError(f"state must be one of {', '.join(STATE_ORDER)}; got {state!r}")
        return _answer(lambda: render(registered_findings(home, [state] if state else ()), "json"))

    @app.tool(annotations=_READ_ONLY)
    def get_finding(finding_id: str) -> str:
        """One finding as JSON, by its id (finding-<16 hex>)."""

        def one() -> Finding | None:
            require_index(home)
            return load_finding(home, finding_id)

        finding = _answer(one)
        if finding is None:
            raise ToolError(f"no finding {finding_id}: list_findings shows the registered ones")
        return render([finding], "json")

    @app.tool(annotations=_WRITES)
    def generate_case(
        finding_id: str, output: str, confirm_read_only: bool, expect: dict[str, Any] | None = None
    ) -> str:
        """Write a one-case verification manifest (YAML) for a finding to `output`; returns its text.

        Replace every `<fill: TYPE>` placeholder with a value that reproduced the
        failure before verifying. `confirm_read_only` must be true: verification
        calls the tool several times. `expect` is the case's expect block (the
        check layer's format); a false-success finding needs a result assertion
        or `{"outcome": "error"}`.
        """

        def generate() -> str:
            parsed = _parse_expect(expect)
            path = generate_manifest(
                home,
                finding_id,
                confirm_read_only=confirm_read_only,
                output=Path(output),
                expect=parsed,
                expect_source="expect",
            )
            return path.read_text(encoding="utf-8")

        return _answer(generate)

    @app.tool(annotations=_WRITES)
    def verify_fix(
        finding_id: str,
        case: str,
        manifest: str,
        command: list[str] | None = None,
        url: str | None = None,
        run_id: str | None = None,
    ) -> str:
        """Run a manifest's case against the server and record the result; returns the verdict lines.

        Give the stdio server as `command` (e.g. ["python", "server.py"]) or a
        streamable-HTTP `url`. The result is recorded as advisory: it does not move
        the finding. A red names `reason=` and a `hint:` line.
        """

        def verify() -> str:
            if bool(command) == bool(url):
                raise ToolError("give the server once: `command` (a list of words) or `url`")
            server = resolve_server(
                None, command=shlex.join(command) if command else None, url=url, base_dir=Path.cwd()
            )
            result = verify_finding(
                home, finding_id, case, Path(manifest), server, origin="serve", run_id=run_id
            )
            return "\n".join(result.lines())

        return _answer(verify)

    return app


def _parse_expect(expect: dict[str, Any] | None) -> Expect | None:
    if expect is None:
        return None
    try:
        return Expect.model_validate(expect)
    except pydantic.ValidationError as exc:
        problems = "; ".join(
            f"expect.{'.'.join(str(part) for part in error['loc'])}: {error['msg']}"
            for error in exc.errors(include_url=False)
        )
        raise ToolError(f"invalid expect block: {problems}") from None


def serve(home: Home | None = None) -> None:
    """Serve the findings over stdio until the client disconnects."""
    build_server(home or Home.resolve()).run()
