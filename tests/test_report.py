"""`mcpipechekr report` and the loop's report.html, opened in a real headless Chromium.

One project copy of the bundled example goes through two iterations of `doit
loop` without a terminal (stopped at the first review, approved with
`mcpipechekr review --approve`, fixed, traced and evaluated again), which
writes the report after each evaluation. The page is then loaded in Chromium
(Debian's `chromium`, driven by Playwright, no browser download) and its DOM
is checked against the run folders: a chart line per task, a bug-table row per
bug of bug_report.json, evidence links that reveal the very trace step, and a
hostile tool result, model text, tool description and bug trigger shown as text
and never run.

Chromium is required, not optional: .ci/run installs it; without it these
tests fail saying so. With $MCPIPECHEKR_REPORT_SCREENSHOT set to a path, the
screenshot of the report is also copied there (that is how docs/report.png is
made: `MCPIPECHEKR_REPORT_SCREENSHOT=docs/report.png pytest tests/test_report.py`).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from headless import launched_chromium
from project import copy_project, doit, mcpipechekr

from mcpipechekr.artifacts import BugReport, RunDir, Trace, is_temp_file, list_runs, read_model
from mcpipechekr.cli import main
from mcpipechekr.evaluate.aggregate import folded
from mcpipechekr.report import REPORT_FILE, write_report

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_report")]

SCREENSHOT_ENV = "MCPIPECHEKR_REPORT_SCREENSHOT"
HOSTILE = '<script>window.__injected = 1</script><img src="x" onerror="window.__injected = 2">'


@pytest.fixture(scope="module")
def env(emailindex_env: dict[str, str]) -> dict[str, str]:
    return {**emailindex_env, "COLUMNS": "200"}


@pytest.fixture(scope="module")
def looped(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> Path:
    """Two iterations of `doit loop` on the example, each stopped at its review, each writing its report."""
    project = copy_project(tmp_path_factory.mktemp("report"))
    assert doit(project, env, "baseline").returncode == 0
    first = doit(project, env, "loop")
    (run1,) = list_runs(project / "runs")
    assert f"report → runs/{run1.run_id}/{REPORT_FILE}" in first.stdout, first.stdout[-3000:]
    assert (run1.root / REPORT_FILE).is_file()
    approved = mcpipechekr(project, env, "review", run1.run_id, "--approve")
    assert approved.returncode == 0, approved.stdout + approved.stderr
    second = doit(project, env, "loop")
    runs = list_runs(project / "runs")
    assert len(runs) == 2, second.stdout[-3000:] + second.stderr[-3000:]
    assert f"report → runs/{runs[1].run_id}/{REPORT_FILE}" in second.stdout, second.stdout[-3000:]
    # printed before the review asks, so a person can open it while deciding
    assert second.stdout.rindex(f"runs/{runs[1].run_id}/{REPORT_FILE}") < second.stdout.rindex("Review of")
    return project


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with launched_chromium("the report tests") as launched:
        yield launched


class Opened:
    """A report loaded in a fresh page: the page, and every request and script error it made."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))
        self.page.goto(path.as_uri())

    def screenshot(self, path: Path, *, record: bool = False) -> Path:
        """A screenshot in the test's folder; with `record`, copied to $MCPIPECHEKR_REPORT_SCREENSHOT too."""
        self.page.screenshot(path=str(path))
        if record and (target := os.environ.get(SCREENSHOT_ENV)):
            shutil.copyfile(path, target)
        return path


@pytest.fixture
def opened(browser: Any) -> Iterator[Any]:
    pages: list[Opened] = []

    def open_report(path: Path) -> Opened:
        pages.append(Opened(browser, path))
        return pages[-1]

    yield open_report
    for page in pages:
        page.page.close()


def reports(project: Path) -> list[BugReport]:
    return [read_model(run.bug_report, BugReport) for run in list_runs(project / "runs")]


def test_the_loops_report_covers_its_iterations_in_one_self_contained_file(
    looped: Path, opened, tmp_path: Path
):
    first, second = list_runs(looped / "runs")
    page = opened(second.root / REPORT_FILE)
    assert page.page.locator("section.run").evaluate_all("nodes => nodes.map(n => n.dataset.run)") == [
        first.run_id,
        second.run_id,
    ]
    compared = page.page.locator("#compare section.mcpc-compare")  # `mcpipechekr compare`, first → last
    assert compared.count() == 1 and f"{first.run_id} → {second.run_id}" in compared.inner_text()
    assert page.requests == [(second.root / REPORT_FILE).as_uri()]  # nothing fetched: no CDN, no font
    assert page.errors == []
    page.page.set_viewport_size({"width": 1280, "height": 1180})  # the runs, the charts and their legend
    page.screenshot(tmp_path / "report.png", record=True)
    assert (tmp_path / "report.png").stat().st_size > 0


def test_each_chart_has_one_series_per_task(looped: Path, opened) -> None:
    tasks = {stats.task_id for report in reports(looped) for stats in report.tasks}
    assert len(tasks) >= 2
    page = opened(list_runs(looped / "runs")[-1].root / REPORT_FILE).page
    charts = page.locator("svg.chart")
    assert charts.evaluate_all("nodes => nodes.map(n => n.dataset.metric)") == [
        "success",
        "calls",
        "tokens",
        "wasted",
    ]
    for position in range(charts.count()):
        series = charts.nth(position).locator("g.series")
        named = series.evaluate_all("nodes => nodes.map(n => n.dataset.task)")
        assert sorted(named) == sorted(tasks) and len(named) == len(tasks)
    # a point per evaluated run: the fixed task took fewer calls in the second iteration
    calls = page.locator(
        'svg.chart[data-metric="calls"] g.series[data-task="find-first-email-ron-chinn"] circle'
    )
    before, after = (float(value) for value in calls.evaluate_all("nodes => nodes.map(n => n.dataset.value)"))
    assert after < before


def test_the_bug_tables_rows_are_the_bug_reports_bugs(looped: Path, opened) -> None:
    runs = list_runs(looped / "runs")
    page = opened(runs[-1].root / REPORT_FILE).page
    for run, report in zip(runs, reports(looped), strict=True):
        rows = page.locator(f'table.bugs[data-run="{run.run_id}"] tbody tr')
        ids = rows.evaluate_all("nodes => nodes.map(n => n.dataset.bugId)")
        assert ids == [bug.id for bug in folded(report.bugs)[0]] and ids


def test_a_bug_with_no_cost_of_its_own_is_no_row_but_named_in_the_row_that_prices_it(
    looped: Path, tmp_path: Path
) -> None:
    run = list_runs(looped / "runs")[0]
    copy = RunDir(Path(shutil.copytree(run.root, tmp_path / "runs" / run.run_id)))
    report = orjson.loads(copy.bug_report.read_bytes())
    owner = report["bugs"][0]
    priced = {**owner, "id": "EFF-repeated-calls-priced-elsewhere", "type": "efficiency"}
    priced.update(
        token_cost_of_gap=0, token_cost_optimal=priced["token_cost_observed"], see_also=[owner["id"]]
    )
    report["bugs"].append(priced)
    copy.bug_report.write_bytes(orjson.dumps(report))
    page = write_report(copy, tmp_path / "folded.html").read_text()
    assert 'data-bug-id="EFF-repeated-calls-priced-elsewhere"' not in page
    row = page[page.index(f'data-bug-id="{owner["id"]}"') :]
    row = row[: row.index("</tr>")]
    assert "also covers, at no cost of its own: <code>EFF-repeated-calls-priced-elsewhere</code>" in row


def test_an_evidence_link_reveals_its_trace_step(looped: Path, opened, tmp_path: Path) -> None:
    run = list_runs(looped / "runs")[0]
    report = read_model(run.bug_report, BugReport)
    bug = next(bug for bug in report.bugs if bug.evidence and len(bug.evidence[0].steps) > 1)
    evidence = bug.evidence[0]
    step = evidence.steps[1]  # not the first: the link must lead to the one it names
    page = opened(run.root / REPORT_FILE).page
    target = page.locator(f"#step-{run.run_id}-{Path(evidence.trace).stem}-{step}")
    assert not target.is_visible()  # its trace is closed until asked for
    link = page.locator(f'tr[data-bug-id="{bug.id}"] a.evidence').nth(1)
    assert link.inner_text() == f"{evidence.task_id} #{step}"
    link.click()
    assert target.is_visible()
    assert target.get_attribute("data-step") == str(step)
    assert bug.id in (target.get_attribute("data-bugs") or "").split()
    assert "wasted" in (target.get_attribute("class") or "").split()
    assert target.evaluate(
        "n => { const r = n.getBoundingClientRect(); return r.top >= 0 && r.top < window.innerHeight; }"
    )  # scrolled to it
    assert page.evaluate("location.hash") == f"#step-{run.run_id}-{Path(evidence.trace).stem}-{step}"
    trace = Trace.model_validate_json((run.root / evidence.trace).read_bytes())
    tool = trace.steps[step].tool if trace.steps[step].kind == "tool_call" else None
    if tool:
        assert tool in target.inner_text()
    page.screenshot(path=str(tmp_path / "evidence.png"))


def hostile_copy(run: RunDir, into: Path) -> tuple[RunDir, str]:
    """A copy of `run` whose first tool result, model text, tool description and bug trigger carry markup."""
    copy = RunDir(Path(shutil.copytree(run.root, into / "runs" / run.run_id)))
    report = orjson.loads(copy.bug_report.read_bytes())
    report["bugs"][0]["trigger"] = HOSTILE
    copy.bug_report.write_bytes(orjson.dumps(report))
    tools = orjson.loads(copy.tools.read_bytes())
    tools["tools"][0]["description"] = HOSTILE
    copy.tools.write_bytes(orjson.dumps(tools))
    for path in sorted(copy.traces.glob("*.json")):
        trace = orjson.loads(path.read_bytes())
        calls = [step for step in trace["steps"] if step["kind"] == "tool_call" and step["result_content"]]
        if calls:
            calls[0]["result_content"] = [{"type": "text", "text": HOSTILE}]
            trace["steps"][0]["text"] = HOSTILE
            trace["final_answer"] = HOSTILE
            path.write_bytes(orjson.dumps(trace))
            return copy, f"step-{copy.run_id}-{path.stem}-{calls[0]['index']}"
    raise AssertionError("no trace with a tool result to plant markup in")


def test_markup_from_traces_and_tools_is_shown_as_text_never_run(
    looped: Path, opened, tmp_path: Path
) -> None:
    copy, step = hostile_copy(list_runs(looped / "runs")[0], tmp_path)
    path = write_report(copy, tmp_path / "hostile.html")
    page = opened(path)
    assert page.page.evaluate("typeof window.__injected") == "undefined"
    assert page.dialogs == [] and page.errors == []
    assert (
        page.page.locator("img").count() == 0 and page.page.locator("script").count() == 1
    )  # the page's own
    result = page.page.locator(f"#{step} .result pre")
    page.page.locator(f"#{step}").evaluate("n => n.closest('details').open = true")
    assert result.inner_text() == HOSTILE
    triggers = page.page.locator("table.bugs tr[data-bug-id] td:nth-child(7) > div")
    assert HOSTILE in triggers.evaluate_all("nodes => nodes.map(n => n.textContent)")
    assert page.page.locator("details.tools li span").first.text_content() == HOSTILE
    page.screenshot(tmp_path / "hostile.png")


def test_the_command_writes_one_run_or_every_run(looped: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(looped)
    first, second = list_runs(looped / "runs")
    runner = CliRunner()
    every = runner.invoke(main, ["report"], catch_exceptions=False)
    assert every.exit_code == 0, every.output
    assert every.output == f"report → runs/{REPORT_FILE}\n"
    page = (looped / "runs" / REPORT_FILE).read_text()
    assert re.findall(r'<section class="run" id="run-[^"]+" data-run="([^"]+)"', page) == [
        first.run_id,
        second.run_id,
    ]
    one = runner.invoke(main, ["report", first.run_id, "--output", "one.html"], catch_exceptions=False)
    assert one.exit_code == 0 and one.output == "report → one.html\n"
    assert re.findall(r'data-run="(run-[^"]+)"><h3>', (looped / "one.html").read_text()) == [first.run_id]
    unknown = runner.invoke(main, ["report", "run-19990101-001"])
    assert unknown.exit_code == 2 and "no run `run-19990101-001`" in unknown.output
    assert not [path for path in looped.rglob("*") if is_temp_file(path)]  # written atomically


def test_every_link_stays_in_the_page(looped: Path) -> None:
    page = (list_runs(looped / "runs")[-1].root / REPORT_FILE).read_text()
    assert set(re.findall(r'(?:href|src)="([^"#]?)', page)) <= {""}  # only #fragments
