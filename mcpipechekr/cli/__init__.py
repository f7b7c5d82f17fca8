"""The ``mcpipechekr`` command line.

Each command lives in its own module and is a thin call into the library, so the
doit graph and the CLI run the same code. New commands are registered here.
"""

from __future__ import annotations

import click

from mcpipechekr import __version__
from mcpipechekr.cli.annotate_cmd import annotate_command
from mcpipechekr.cli.baseline_cmd import baseline_command
from mcpipechekr.cli.capture_cmd import capture_command
from mcpipechekr.cli.check_cmd import check_command
from mcpipechekr.cli.docs_cmd import docs_command
from mcpipechekr.cli.evaluate_cmd import evaluate_command
from mcpipechekr.cli.export_cmd import export_command
from mcpipechekr.cli.findings_cmd import findings_command
from mcpipechekr.cli.fix_cmd import fix_command
from mcpipechekr.cli.generate_cmd import generate_command
from mcpipechekr.cli.import_cmd import import_command
from mcpipechekr.cli.index_cmd import index_command
from mcpipechekr.cli.init_cmd import init_command
from mcpipechekr.cli.lint_cmd import lint_command
from mcpipechekr.cli.promote_cmd import promote_command
from mcpipechekr.cli.review_cmd import review_command
from mcpipechekr.cli.run_cmd import run_command
from mcpipechekr.cli.schema_cmd import schema_command
from mcpipechekr.cli.serve_cmd import serve_command
from mcpipechekr.cli.server_cmd import server_group
from mcpipechekr.cli.validate_cmd import validate_command
from mcpipechekr.cli.verify_cmd import verify_command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mcpipechekr")
def main() -> None:
    """Measure how LLM agents use your MCP server, and fix what costs them.

    Start with `mcpipechekr init`, check the files with `mcpipechekr validate`,
    then run the pipeline with `doit loop`.
    """


main.add_command(init_command)
main.add_command(check_command)
main.add_command(lint_command)
main.add_command(baseline_command)
main.add_command(run_command)
main.add_command(import_command)
main.add_command(evaluate_command)
main.add_command(review_command)
main.add_command(fix_command)
main.add_command(validate_command)
main.add_command(schema_command)
main.add_command(docs_command)
main.add_command(server_group)
main.add_command(capture_command)
main.add_command(index_command)
main.add_command(promote_command)
main.add_command(findings_command)
main.add_command(annotate_command)
main.add_command(generate_command)
main.add_command(verify_command)
main.add_command(export_command)
main.add_command(serve_command)
