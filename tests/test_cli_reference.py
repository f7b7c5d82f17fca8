"""docs/cli.md: rendered from the click commands and the doit graph, complete, and kept current."""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import click
from click.testing import CliRunner

from mcpipechekr import graph
from mcpipechekr.cli import main
from mcpipechekr.cli.reference import render_command, render_reference, walk_commands

REPO = Path(__file__).resolve().parent.parent
REFERENCE = REPO / "docs" / "cli.md"


def _sections(text: str) -> dict[str, str]:
    """Each command's section of the page, by command path."""
    sections: dict[str, str] = {}
    name = None
    for line in text.splitlines():
        if line.startswith(("## `", "### `")):
            name = line.split("`")[1]
            sections[name] = ""
        elif line.startswith("## "):
            name = None
        elif name is not None:
            sections[name] += line + "\n"
    return sections


def test_checked_in_reference_is_current() -> None:
    assert REFERENCE.read_text(encoding="utf-8") == render_reference(main), (
        "docs/cli.md is stale: run `mcpipechekr docs`"
    )


def test_every_registered_command_and_option_is_in_the_reference() -> None:
    sections = _sections(render_reference(main))
    expected: list[str] = []

    def visit(command: click.Command, path: str) -> None:
        expected.append(path)
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                for name in param.opts + param.secondary_opts:
                    assert f"`{name}" in sections[path], f"{path}: {name} missing"
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            for name in command.list_commands(ctx):  # the lazy group imports each command here
                sub = command.get_command(ctx, name)
                assert sub is not None, f"{path} {name} is registered but cannot be loaded"
                visit(sub, f"{path} {name}")

    visit(main, "mcpipechekr")
    assert sorted(sections) == sorted(expected)
    assert {"mcpipechekr docs", "mcpipechekr server health", "mcpipechekr check"} <= set(sections)


def test_a_command_renders_usage_help_arguments_and_options() -> None:
    @click.group()
    def tool() -> None:
        """The tool."""

    @tool.command("show")
    @click.argument("run", default="latest")
    @click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
    @click.option("--tag", multiple=True, help="Only this tag.")
    @click.option("--id", "ident", required=True, help="The `<id>` of a <thing> & more.")
    @click.option("--ask/--no-ask", default=None, help="Ask first.")
    @click.option("--all", "everything", is_flag=True, help="Everything.")
    @click.option("--home", default=lambda: os.getcwd(), show_default="the current folder", help="Home.")
    def show(**_: object) -> None:
        """Show a run.

        RUN is a run id or
        `latest`.

        \b
        Examples:
          tool show latest
        """

    ctx = [ctx for ctx in walk_commands(tool) if ctx.command_path == "mcpipechekr show"][0]
    assert "\n".join(render_command(ctx)) == (
        "## `mcpipechekr show`\n\n"
        "Show a run.\n\n"
        "RUN is a run id or `latest`.\n\n"
        "```text\nExamples:\n  tool show latest\n```\n\n"
        "```text\nmcpipechekr show [OPTIONS] [RUN]\n```\n\n"
        "| Argument | Default | Meaning |\n| --- | --- | --- |\n"
        "| `[RUN]` | `latest` | optional |\n\n"
        "| Option | Default | Meaning |\n| --- | --- | --- |\n"
        "| `--format [text\\|json]` | `text` |  |\n"
        "| `--tag TEXT` (repeatable) |  | Only this tag. |\n"
        "| `--id TEXT` (required) |  | The `<id>` of a &lt;thing> &amp; more. |\n"
        "| `--ask` / `--no-ask` |  | Ask first. |\n"
        "| `--all` |  | Everything. |\n"
        "| `--home TEXT` | the current folder | Home. |\n"
    )


def test_doit_tasks_are_listed_with_their_docstrings_and_flags() -> None:
    text = render_reference(main)
    doit = text[text.index("## doit tasks") :]
    tasks = {
        name.removeprefix("task_"): inspect.getdoc(fn).splitlines()[0]
        for name, fn in vars(graph).items()
        if name.startswith("task_") and not name.startswith("task__")
    }
    assert {"loop", "baseline", "lint", "check", "trace", "evaluate", "review", "fix", "report"} <= set(tasks)
    width = max(map(len, tasks)) + 3
    for name, doc in tasks.items():
        assert f"\n{name:<{width}}{doc}\n" in doit
    assert "_tools" not in doit  # private, as `doit list` hides it
    for param in graph.PARAMS:
        assert f"| `--{param['long']}` |" in doit


def test_docs_command_writes_once_and_check_reports_stale(tmp_path: Path) -> None:
    out = tmp_path / "docs" / "cli.md"
    cli = CliRunner()
    missing = cli.invoke(main, ["docs", "--out", str(out), "--check"], catch_exceptions=False)
    assert missing.exit_code == 1 and "is missing" in missing.output and not out.exists()

    written = cli.invoke(main, ["docs", "--out", str(out)], catch_exceptions=False)
    assert written.exit_code == 0 and written.output == f"wrote {out}\n"
    assert out.read_text(encoding="utf-8") == render_reference(main)

    os.utime(out, ns=(1, 1))  # a rewrite would move the time forward again
    again = cli.invoke(main, ["docs", "--out", str(out)], catch_exceptions=False)
    assert again.exit_code == 0 and "up to date" in again.output and out.stat().st_mtime_ns == 1
    assert cli.invoke(main, ["docs", "--out", str(out), "--check"]).exit_code == 0

    out.write_text(out.read_text(encoding="utf-8").replace("Show the version", "Old wording"))
    stale = cli.invoke(main, ["docs", "--out", str(out), "--check"], catch_exceptions=False)
    assert stale.exit_code == 1 and "out of date" in stale.output and "mcpipechekr docs --out" in stale.output
    assert "Old wording" in out.read_text(encoding="utf-8")
