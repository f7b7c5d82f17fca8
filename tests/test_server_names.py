"""A --command server is named after the program that really runs, through every kind of launcher.

The name is what reports, pins (`.mcpipechekr/pins/<name>.json`) and logs
(`logs/<name>.stderr.log`) are called, so two servers started through `env` in
one folder must not both be `env`. Each case is a launcher's own syntax; none
depends on a folder or file existing.
"""

from __future__ import annotations

import shlex

import pytest

from mcpipechekr.server.program import program_of
from mcpipechekr.server.target import resolve_server


def name_of(command: str, tmp_path, cwd: str | None = None) -> str:
    return resolve_server(None, command=command, cwd=cwd, base_dir=tmp_path).name


@pytest.mark.parametrize(
    ("command", "name"),
    [
        # env, its options and assignments
        ("env A=1 B=2 my-server --flag", "my-server"),
        ("env -i -u LANG -C /srv -- HOME=/h /v/bin/slow-notes-mcp --stdio", "slow-notes-mcp"),
        ("env -S 'PORT=1 notes-mcp' --verbose", "notes-mcp"),
        ("/usr/bin/env LOG=debug python3 tools/notes_server.py", "notes_server"),
        # shells: the inner command line, split and read by the same rules
        ("sh -c 'exec notes-mcp --stdio'", "notes-mcp"),
        ("bash -lc 'cd ../weather && A=1 node dist/index.js 2>/dev/null'", "weather"),
        ("sh -e -c 'export X=1; python -m mcp_server_git'", "mcp_server_git"),
        # package runners
        ("npx -y @modelcontextprotocol/server-filesystem /tmp", "server-filesystem"),
        ("npx --package @acme/tools -y @acme/notes-mcp@1.2.3 --read-only", "notes-mcp"),
        ("bunx @acme/notes-mcp@latest", "notes-mcp"),
        ("uvx --from mcp-server-git mcp-server-git@1.2 --repository .", "mcp-server-git"),
        ("uvx mcp-server-fetch==2025.1", "mcp-server-fetch"),
        ("pipx run --spec notes-mcp==1.0 notes-mcp", "notes-mcp"),
        ("uv run --with httpx --directory ../notes server.py", "notes"),
        ("uv run notes-mcp --stdio", "notes-mcp"),
        ("uv tool run mcp-server-time", "mcp-server-time"),
        # interpreters
        ("python -m mcp_server_git --repository .", "mcp_server_git"),
        ("python3.11 -m pkg.server", "pkg.server"),
        ("python -u -X dev -m notes.__main__", "notes"),
        ("python ../notes-server/server.py", "notes-server"),
        ("python tests/servers/tiny_server.py --x", "tiny_server"),
        ("node ../weather/dist/index.js", "weather"),
        ("node --require dotenv/config packages/calendar/build/main.mjs", "calendar"),
        ("deno run -A --config deno.json https://deno.land/x/notes/mod.ts", "notes"),
        ("deno run --allow-net npm:@acme/weather-mcp", "weather-mcp"),
        # containers
        ("docker run -i --rm -e TOKEN -v /a:/b ghcr.io/github/github-mcp-server:v1.2", "github-mcp-server"),
        ("podman run -it --rm --name x mcp/fetch@sha256:abc", "fetch"),
        # executables
        ("/x/venv/bin/slow-notes-mcp", "slow-notes-mcp"),
        ("/opt/calendar/bin/server --stdio", "calendar"),
        ("/usr/local/bin/my-mcp --stdio", "my-mcp"),
        ("python 'my server.py' --fast", "my server"),
    ],
)
def test_the_name_is_the_program_behind_the_launchers(tmp_path, command, name):
    assert name_of(command, tmp_path) == name


def test_a_generic_script_is_named_after_the_folder_it_runs_in(tmp_path):
    (tmp_path / "weather" / "dist").mkdir(parents=True)
    assert name_of("node dist/index.js", tmp_path, cwd=str(tmp_path / "weather")) == "weather"
    # nothing on the path names it: the stem stays (init then names the project after its folder)
    assert name_of("node dist/index.js", tmp_path) == "index"


def test_two_servers_started_through_env_get_files_of_their_own(tmp_path):
    first = resolve_server(None, command="env HOME=/a notes-mcp", base_dir=tmp_path)
    second = resolve_server(None, command="env HOME=/b calendar-mcp", base_dir=tmp_path)
    assert (first.name, second.name) == ("notes-mcp", "calendar-mcp")
    # the command itself is kept as given
    assert (first.command, first.args) == ("env", ["HOME=/a", "notes-mcp"])


@pytest.mark.parametrize(
    ("command", "kind", "target", "chdir"),
    [
        ("env -C /srv/notes python server.py", "script", "server.py", ("/srv/notes",)),
        ("sh -c 'cd app && node dist/index.js'", "script", "dist/index.js", ("app",)),
        ("uv run --directory svc -m notes", "module", "notes", ("svc",)),
        ("python -c 'import notes'", "executable", "python", ()),
        ("npx -y notes-mcp", "package", "notes-mcp", ()),
        ("docker run -i notes:1", "image", "notes:1", ()),
        ("env A=1", "unknown", "", ()),
    ],
)
def test_what_a_command_line_runs(command, kind, target, chdir):
    program = program_of(shlex.split(command))
    assert (program.kind, program.target, program.chdir) == (kind, target, chdir)
