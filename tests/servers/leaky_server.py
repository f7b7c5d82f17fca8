"""An MCP server that tells everyone its secrets, for the redaction tests.

At start it writes to stderr every environment variable named `LEAKY_*` or
`*_API_KEY` and its own command line, each value raw, JSON-escaped,
URL-escaped and shell-quoted, as careless servers do in their start-up
banner. Its one tool, `token_report`, answers a JSON document of the same
values: a secret that reaches a trace or a journal inside JSON text.

--exit-at-start CODE   print the banner, then exit before speaking MCP
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from urllib.parse import quote, quote_plus


def leaked() -> dict[str, str]:
    """The variables this server prints: its configured secrets and any API key it inherited."""
    return {
        name: value
        for name, value in sorted(os.environ.items())
        if name.startswith("LEAKY_") or name.endswith("_API_KEY")
    }


def banner() -> None:
    for name, value in leaked().items():
        print(f"leaky: {name}={value}", file=sys.stderr)
        print(f"leaky: json {json.dumps({name: value})}", file=sys.stderr)
        print(f"leaky: url https://example.test/?{name}={quote(value, safe='')}", file=sys.stderr)
        print(f"leaky: form {name}={quote_plus(value)}", file=sys.stderr)
        print(f"leaky: shell export {name}={shlex.quote(value)}", file=sys.stderr)
    print(f"leaky: argv {shlex.join(sys.argv)}", file=sys.stderr)
    print(f"leaky: argv json {json.dumps(sys.argv)}", file=sys.stderr, flush=True)


banner()
if "--exit-at-start" in sys.argv:
    sys.exit(int(sys.argv[sys.argv.index("--exit-at-start") + 1]))

from mcp.server.mcpserver import MCPServer  # noqa: E402
from mcp.types import ToolAnnotations  # noqa: E402

app = MCPServer("leaky")


@app.tool(
    description="Report the service tokens this server holds, as a JSON document.",
    annotations=ToolAnnotations(readOnlyHint=True, destructiveHint=False),
)
def token_report() -> str:
    return json.dumps(leaked())


if __name__ == "__main__":
    app.run()
