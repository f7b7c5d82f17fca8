"""Which server a finding belongs to: the identity of its source, stable where the code is the same.

Real git repositories and folders in a temp dir; the command lines are what config.yaml holds.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from mcpipechekr.config import ServerConfig
from mcpipechekr.findings.server_identity import server_key, source_identity
from mcpipechekr.server.workspace import prepare_repo


def _from_template(template: Path, repo: Path) -> ServerConfig:
    server = ServerConfig(
        name="notes",
        command=sys.executable,
        args=["server.py"],
        cwd=str(repo),
        repo=str(repo),
        repo_template=str(template),
    )
    prepare_repo(server)
    return server


def test_two_repositories_made_from_one_template_are_one_server(tmp_path: Path) -> None:
    template = tmp_path / "template"
    template.mkdir()
    (template / "server.py").write_text("print('notes')\n")
    first = _from_template(template, tmp_path / "one" / "repo")
    again = _from_template(template, tmp_path / "two" / "repo")
    assert source_identity(first) == source_identity(again)
    assert source_identity(first).startswith("git:") and source_identity(first).endswith(":server.py")
    (template / "server.py").write_text("print('other notes')\n")
    other = _from_template(template, tmp_path / "three" / "repo")
    assert source_identity(other) != source_identity(first)  # another first commit: another server


def test_a_moved_checkout_is_the_same_server_and_a_plain_copy_elsewhere_is_not(tmp_path: Path) -> None:
    template = tmp_path / "template"
    template.mkdir()
    (template / "server.py").write_text("print('notes')\n")
    server = _from_template(template, tmp_path / "here" / "repo")
    shutil.copytree(tmp_path / "here", tmp_path / "moved")
    moved = server.model_copy(update={"cwd": str(tmp_path / "moved" / "repo"), "repo": None})
    assert source_identity(moved) == source_identity(server)
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "server.py").write_text("print('notes')\n")  # the same bytes, outside any repository
    plain = ServerConfig(name="notes", command=sys.executable, args=["server.py"], cwd=str(loose))
    assert source_identity(plain) == f"script:{(loose / 'server.py').resolve()}"


def test_packages_images_and_urls_name_their_source_without_versions_or_secrets() -> None:
    def identity(**fields: object) -> str:
        return source_identity(ServerConfig.model_validate({"name": "s", **fields}))

    assert identity(command="npx", args=["-y", "@acme/notes-mcp@1.2.0"]) == identity(
        command="npx", args=["-y", "@acme/notes-mcp@1.3.0", "--verbose"]
    )
    assert identity(command="npx", args=["-y", "@acme/notes-mcp"]) != identity(
        command="npx", args=["-y", "@acme/other-mcp"]
    )
    assert identity(command="docker", args=["run", "-i", "ghcr.io/acme/notes:1"]) == identity(
        command="docker", args=["run", "-i", "--rm", "ghcr.io/acme/notes:2"]
    )
    url = identity(url="https://mcp.example.org:8443/mcp?key=s3cret")
    assert url == "url:https://mcp.example.org:8443/mcp" and "s3cret" not in url
    assert server_key(ServerConfig(name="a", url="http://127.0.0.1:9/mcp")).name == "a"
