"""`mcpipechekr serve`: one project's findings as an MCP server (stdio), so a coding agent can check its fix.

The server is bound when it starts to one project: its config.yaml (whose
`server` is the server under test) and its findings home. Its client, the
coding agent that fixes that server, names no command, URL or path: only
finding ids, the case's values and expectation. Four tools:

- `list_findings` and `get_finding` (read-only): the sanitized findings as
  JSON (the `findings --format json` document); a missing, corrupt or
  incomplete index is the same "evidence unavailable" error the CLI exits 3
  with;
- `generate_case`: writes the finding's verification manifest to its case
  file, `<home>/cases/<finding-id>.yaml` (`verification/case_files.py`: the id
  is checked in full before it becomes a name, no link below the home is
  followed), with the placeholders of the given `arguments` filled in, and
  answers the case id and the manifest's text;
- `verify_fix`: runs a case of that case file against the configured server,
  started by the harness itself, and answers the report lines of
  `mcpipechekr verify`.

Credit: a `verify_fix` run is recorded with the origin `serve` and is
advisory. Its verdict is the agent's to read; it moves nothing in the
finding's lifecycle: a green never starts or extends a streak, so no number of
them closes a finding, and a red neither reopens a finding nor counts as a
regression (`lifecycle/states.py`). A case written here is proposed: it
counts only once a person has read and accepted it (`mcpipechekr verify
--accept-case`, `verification/acceptance.py`), and a finding moves only on
runs a person starts (`mcpipechekr verify`) or the loop does; the loop reruns
an accepted case file only, and `generate_case` never replaces a case file a
credited run used.

Errors come back as tool errors (`isError: true`) with the CLI's message, so
an agent reads what a person would. The only file any answer quotes is a
case file in the home's cases folder.
"""

from __future__ import annotations

import sys
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
from mcpipechekr.config import Config
from mcpipechekr.findings.home import HOME_ENV, Home
from mcpipechekr.findings.lifecycle.store import load_finding
from mcpipechekr.findings.promotion.promote import registered_findings, require_index
from mcpipechekr.findings.verification.case_files import require_finding_id
from mcpipechekr.findings.verification.generate import generate_case_file
from mcpipechekr.findings.verification.verify import verify_case_file
from mcpipechekr.findings.views.render import STATE_ORDER, render

T = TypeVar("T")

_READ_ONLY = mcp_types.ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)
# Writes one file, the finding's case file in the home; the only file it replaces is that same case
# file, as the same tool wrote it earlier (a case file a credited run used is never replaced), and
# the same arguments write the same bytes.
_WRITES_CASE_FILE = mcp_types.ToolAnnotations(
    readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False
)
# Starts the configured server and calls the finding's tool several times. The harness calls only
# a tool the server annotates read-only (a case file written here opts no tool in), but that
# annotation is the server's own claim, and the server's code is the very code being fixed, which
# the client may be editing: MCPipeChekr cannot promise what it does when run, so the tool is
# declared possibly destructive and open-world (the server may reach outside). Each run is a new
# record, so it is not idempotent.
_RUNS_SERVER = mcp_types.ToolAnnotations(
    readOnlyHint=False, destructiveHint=True, idempotentHint=False, openWorldHint=True
)


class GeneratedCaseAnswer(pydantic.BaseModel):
    """What `generate_case` answers: the case to verify and the manifest as written."""

    case: str = pydantic.Field(description="The case id to pass to verify_fix (the finding id).")
    manifest: str = pydantic.Field(description="The manifest's YAML, as written to the home's cases folder.")


def _answer(call: Callable[[], T]) -> T:
    """Run a library call; a user-facing error (exit 2 or 3 on the CLI) becomes a tool error with its text."""
    try:
        return call()
    except click.ClickException as exc:
        raise ToolError(exc.format_message()) from None


def build_server(config: Config, home: Home) -> MCPServer:
    """The findings server of one project (its config and its home); `.run()` serves it over stdio."""
    app = MCPServer(
        "mcpipechekr-findings",
        instructions="Findings of recurring failures of the MCP server this project tests: list them, "
        "generate a verification case for one with the values that reproduced it, then verify your fix "
        f"against the project's server ('{config.server.name}'). Verifications here are advisory: they "
        "show whether the fix holds; a finding closes on the loop's or a person's runs.",
    )

    @app.tool(annotations=_READ_ONLY)
    def list_findings(state: str | None = None) -> str:
        """The findings as JSON (class, fix hint, severity, rates, argument shapes); optionally one state.

        `state`: open, fix-claimed, verifying or closed.
        """
        if state is not None and state not in STATE_ORDER:
            raise ToolError(f"state must be one of {', '.join(STATE_ORDER)}")
        return _answer(lambda: render(registered_findings(home, [state] if state else ()), "json"))

    @app.tool(annotations=_READ_ONLY)
    def get_finding(finding_id: str) -> str:
        """One finding as JSON, by its id (finding-<16 hex>)."""

        def one() -> Finding | None:
            require_finding_id(finding_id)
            require_index(home)
            return load_finding(home, finding_id)

        finding = _answer(one)
        if finding is None:
            raise ToolError(f"no finding {finding_id}: list_findings shows the registered ones")
        return render([finding], "json")

    @app.tool(annotations=_WRITES_CASE_FILE)
    def generate_case(
        finding_id: str,
        confirm_read_only: bool,
        arguments: dict[str, Any] | None = None,
        expect: dict[str, Any] | None = None,
    ) -> GeneratedCaseAnswer:
        """Write the finding's one-case verification manifest (YAML) in the project's findings home.

        `arguments`: values for the tool's arguments, the ones that reproduced the
        failure; every argument left out stays a `<fill: TYPE>` placeholder, which
        verify_fix refuses. `confirm_read_only` must be true: verification calls the
        tool several times. `expect` is the case's expect block (the check layer's
        format, default `{"outcome": "ok"}`); a false-success finding needs a
        result assertion or `{"outcome": "error"}`. Calling it again replaces the
        case. Answers the case id and the manifest's text.
        """

        def generate() -> GeneratedCaseAnswer:
            parsed = _parse_expect(expect)
            made = generate_case_file(
                home,
                finding_id,
                confirm_read_only=confirm_read_only,
                arguments=arguments,
                expect=parsed,
                expect_source="expect",
            )
            return GeneratedCaseAnswer(case=made.case_id, manifest=made.text)

        return _answer(generate)

    @app.tool(annotations=_RUNS_SERVER)
    def verify_fix(finding_id: str, case: str | None = None) -> str:
        """Run the finding's case (from generate_case) against the project's server; the verdict lines.

        The harness starts the server the project configures and repeats the case
        (sized from the finding's failure rate); green only when every attempt
        passes; a red names `reason=`, a `hint:` line and what failed. The result
        is recorded as advisory: it does not move the finding (three greens from
        the loop's or a person's runs close it). `case`: the case id, default the
        generated one.
        """

        def verify() -> str:
            result = verify_case_file(
                home, finding_id, config.server, origin="serve", case_id=case, redactor=config.redactor
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


def serve(config: Config, home: Home) -> None:
    """Serve one project's findings over stdio until the client disconnects."""
    build_server(config, home).run()


def serve_argv(config_path: Path) -> list[str]:
    """The command line that starts `mcpipechekr serve` for the project of `config_path`, from any folder.

    For another program's MCP configuration (`command` is the first word,
    `args` the rest), with `serve_env` as its `env`: this interpreter runs the
    package (`python -m mcpipechekr`) and the config is named absolutely.
    """
    return [sys.executable, "-m", "mcpipechekr", "serve", "--config", str(Path(config_path).resolve())]


def serve_env(home: Home) -> dict[str, str]:
    """The environment `serve_argv` needs: the findings home, named absolutely ($MCPIPECHEKR_HOME)."""
    return {HOME_ENV: str(home.root.resolve())}
