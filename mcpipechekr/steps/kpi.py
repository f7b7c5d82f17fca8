"""kpi.json: the run's key figures against config.yaml's `kpi:` targets, written after each evaluation.

Part of the evaluation step (both front ends, and every loop iteration), after
the findings hand-off: the regression rate counts the fixes claimed and the
regressions found since the session's first run (`before_after.run_chain`),
and this run's verification may just have found one. The trend compares with
the run whose fixes this one was traced after (`before_after.previous_run`).
"""

from __future__ import annotations

from mcpipechekr.artifacts import RunDir, write_model
from mcpipechekr.artifacts.kpi import KpiReport
from mcpipechekr.config import Config
from mcpipechekr.runplan import read_manifest
from mcpipechekr.steps.handoff import findings_home


def kpi_step(config: Config, run_dir: RunDir) -> KpiReport:
    """Compute the run's KPIs (`kpi.kpis_of_run`) and write them to its kpi.json; returns them."""
    from mcpipechekr.before_after import previous_run, run_chain
    from mcpipechekr.findings.lifecycle.states import regression_stats
    from mcpipechekr.kpi import kpis_of_run

    chain = run_chain([run_dir])
    started = [manifest.started_at for run in chain if (manifest := read_manifest(run)) is not None]
    stats = regression_stats(findings_home(config), since=min(started) if started else None)
    report = kpis_of_run(
        config.kpi,
        run_dir,
        fixes_claimed=stats.fixes,
        regressions=stats.regressions,
        previous_run=previous_run(run_dir),
        loop=len(chain),
    )
    write_model(run_dir.kpi, report)
    return report
