"""The first step of a run: its folder and manifest, a healthy server, and the tools it offers.

`mcpipechekr run` and doit's `_tools` target both open their run here, so a
run folder is created one way whichever front end starts it.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console

from mcpipechekr._util.console import console
from mcpipechekr._util.yamlsrc import display_path
from mcpipechekr.artifacts import ToolsSnapshot, snapshot_tools, write_model
from mcpipechekr.config import Config
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.runplan import RunPlan
from mcpipechekr.server.connection import HealthReport
from mcpipechekr.server.lifecycle import ServerUnderTest, server_under_test
from mcpipechekr.server.workspace import prepare_repo
from mcpipechekr.steps.stage import open_planned_run, run_stage
from mcpipechekr.tasks import Task


def server_tools(config: Config, server: ServerUnderTest, health: HealthReport) -> ToolsSnapshot:
    """The tools the started server offers, with its health check's protocol version and server info."""
    return snapshot_tools(
        config.server.name,
        server.list_tools(),
        protocol_version=health.protocol_version,
        server_info=health.server_info,
    )


def snapshot_step(
    config: Config,
    plan: RunPlan,
    tasks: Sequence[Task],
    *,
    providers: Sequence[ProviderSpec] = (),
    out: Console = console,
) -> ToolsSnapshot:
    """Open the planned run, start the server, pass its health check, and pin its tools → tools.json.

    `providers` are the Phase 1 models the manifest records (default: the
    config's). A server that does not start fails the run with its reason; its
    stderr stays in the run folder.
    """
    prepare_repo(config.server)
    open_planned_run(config, plan, tasks, providers=providers)
    run_dir = plan.run_dir
    with run_stage(config, run_dir, "tools"):
        with server_under_test(config, run_dir.server_stderr_log, share=True) as server:
            assert server.health is not None
            tools = server_tools(config, server, server.health)
        write_model(run_dir.tools, tools)
    out.print(
        f"{run_dir.run_id}: server '{config.server.name}' healthy, {len(tools.tools)} tools "
        f"({'reused run' if plan.reused else 'new run'}) → {display_path(run_dir.tools)}",
        markup=False,
    )
    return tools
