"""A small git server in the manner of mcp-server-git, for argument synthesis against a real repository.

Started with `--repository PATH` (like mcp-server-git) and a time zone in its
environment (`GITLOG_TZ`). Its read-only tools refuse what a guess gives them:

- `git_log(repo_path)`: `git log` of a repository, as `commit: <sha>` lines; "not a git
  repository" for anything else.
- `git_show(repo_path, revision)`: `git show --stat` of a revision the log printed.
- `office_hours(timezone)`: only the time zone the server was configured with.
"""

from __future__ import annotations

import argparse
import os
import subprocess

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

parser = argparse.ArgumentParser()
parser.add_argument("--repository", required=True)
opts = parser.parse_args()

READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)
app = MCPServer("gitlog", log_level="WARNING")


def _git(repo_path: str, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", repo_path, *args], capture_output=True, text=True, timeout=10, check=False
    )
    if done.returncode != 0:
        raise ToolError(done.stderr.strip().splitlines()[0] if done.stderr.strip() else "git failed")
    return done.stdout


@app.tool(description="The commit log of a repository.", annotations=READ_ONLY)
def git_log(repo_path: str) -> str:
    log = _git(repo_path, "log", "--format=commit: %H%nsubject: %s")
    return log.strip()


@app.tool(description="Show one commit.", annotations=READ_ONLY)
def git_show(repo_path: str, revision: str) -> str:
    return _git(repo_path, "show", "--stat", "--format=%H %s", revision, "--").strip()


@app.tool(description="When the office answers, in its own time zone.", annotations=READ_ONLY)
def office_hours(timezone: str) -> str:
    if timezone != os.environ["GITLOG_TZ"]:
        raise ToolError(f"the office keeps no hours in {timezone!r}")
    return f"09:00-17:00 {timezone}"


if __name__ == "__main__":
    app.run()
