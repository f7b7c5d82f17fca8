"""Phase 2's accuracy on the labelled corpus (bench/corpus/roomdesk), per client.

    .venv/bin/python bench/detector_accuracy.py [--json OUT] [--keep DIR]

Three runs of the same scripted sessions (bench/corpus/roomdesk/sessions.yaml):
the opencode exports and Claude Code stream-json logs recorded with the real
CLIs (roomdesk/recorded/, re-recorded by bench/corpus/record.py) are imported
into a run each, as `mcpipechekr import` does; the native runner runs the
same script live against the scripted OpenAI-compatible fake. Each project
gets the baseline (every task has reference calls, so no model is asked), and
each run is evaluated as `mcpipechekr evaluate` does, offline (`demo` phase-2
provider).

Scoring, per task, against roomdesk/labels.yaml: a reported bug belongs to
every task its evidence names; it matches a label of that task when its type is
one of the label's kinds and its tool is the label's (a label with `tool: null`
takes any tool). A `must` label matched is a hit, unmatched a miss; a bug that
matches only `may` labels counts neither way; a bug matching no label is a
false positive. Precision = hits' bugs / (those + false positives); recall =
hit `must` labels / all `must` labels. Printed per client with the targets,
the spread between clients, every miss and false positive, then where the
clients disagree: bugs not reported by all of them, and shared bugs whose
token cost of gap differs by more than 5 %.

Errored attempts: each client's run also gets, for a few tasks, a second
attempt that is no answer, written as the runners write one (`ERRORED_ATTEMPTS`):
`errored` (the agent never had a working server: no tool call, an apology for
an answer) or `error` (the model provider failed after the agent's calls: the
calls, no answer). Evaluated, they would count in their tasks' figures and
the repeated list_rooms call would be a bug; Phase 2 must leave them out: none
in a bug's evidence, every one in BugReport.errored, none counted in its
task's figures. The check
is printed per client; a bug citing one is a false positive (on top of what
its other evidence scores).
Exit status: 0 whatever the figures (a benchmark, not a test); 2 when a run
could not be made.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent / "corpus"))
import script  # noqa: E402
from fakes.openai_server import FakeOpenAI  # noqa: E402

from mcpipechekr._util.console import console  # noqa: E402
from mcpipechekr.artifacts import BugReport  # noqa: E402
from mcpipechekr.artifacts.rundir import RunDir, create_run_dir  # noqa: E402
from mcpipechekr.artifacts.trace import Trace, list_traces, read_trace, write_trace  # noqa: E402
from mcpipechekr.baseline import build_baseline  # noqa: E402
from mcpipechekr.config import load_config  # noqa: E402
from mcpipechekr.evaluate import evaluate_run  # noqa: E402
from mcpipechekr.providers import parse_provider  # noqa: E402
from mcpipechekr.runners.execute import run_phase1  # noqa: E402
from mcpipechekr.session_import import import_session  # noqa: E402
from mcpipechekr.tasks import load_tasks  # noqa: E402

CLIENTS = ("opencode", "claude-code", "native")
RECORDED_FILE = {"opencode": "{task}.export.json", "claude-code": "{task}.jsonl"}
PRECISION_TARGET = 0.95
RECALL_TARGET = 0.90
SPREAD_TARGET = 0.05

ERRORED_ATTEMPTS = {
    "chloe-organised-march": "errored",
    "orion-capacity": "error",
    "largest-room-floor-3": "error",
}
"""Tasks given a second attempt that is no answer, and its trace status."""
START_FAILURE = "the server answered no request before the client gave up"
PROVIDER_FAILURE = {
    "opencode": "the model request failed: 529 Overloaded",
    "claude-code": "API Error: 529 overloaded_error",
    "native": "ModelHTTPError: status_code: 529, model_name: fake-model, body: overloaded",
}
"""How each client's runner words a provider that failed after its retries (`error`)."""


@dataclass(frozen=True)
class Label:
    """One expected finding of a task."""

    task_id: str
    kinds: tuple[str, ...]
    tool: str | None
    must: bool
    why: str

    def matches(self, bug: dict[str, Any]) -> bool:
        return bug["type"] in self.kinds and (self.tool is None or bug.get("tool") == self.tool)

    def text(self) -> str:
        return f"{'|'.join(self.kinds)} on {self.tool or 'any tool'}"


def load_labels(path: Path = script.LABELS) -> dict[str, list[Label]]:
    """labels.yaml by task id."""
    data = yaml.safe_load(path.read_text())["tasks"]
    out: dict[str, list[Label]] = {}
    for task_id, entries in data.items():
        out[task_id] = []
        for entry in entries or []:
            kinds = entry["kind"] if isinstance(entry["kind"], list) else [entry["kind"]]
            if entry["label"] not in ("must", "may"):
                raise ValueError(f"{path}: task {task_id}: label must be `must` or `may`")
            out[task_id].append(
                Label(
                    task_id,
                    tuple(kinds),
                    entry.get("tool"),
                    entry["label"] == "must",
                    " ".join(str(entry.get("why", "")).split()),
                )
            )
    return out


@dataclass
class Score:
    """One client's figures and the mismatches behind them."""

    client: str
    hits: int = 0
    musts: int = 0
    true_bugs: int = 0
    false_bugs: int = 0
    misses: list[str] = field(default_factory=list)
    false_positives: list[str] = field(default_factory=list)
    bugs: list[dict[str, Any]] = field(default_factory=list)
    errored_check: list[str] = field(default_factory=list)
    errored_ok: bool = True

    @property
    def precision(self) -> float:
        reported = self.true_bugs + self.false_bugs
        return self.true_bugs / reported if reported else 1.0

    @property
    def recall(self) -> float:
        return self.hits / self.musts if self.musts else 1.0


def bug_tasks(bug: dict[str, Any]) -> set[str]:
    """Every task a bug was seen in: its task, its task_ids, its evidence's tasks."""
    tasks = set(bug.get("task_ids") or [])
    if bug.get("task_id"):
        tasks.add(bug["task_id"])
    tasks.update(evidence["task_id"] for evidence in bug.get("evidence") or [])
    return tasks


def score(
    client: str,
    bugs: list[dict[str, Any]],
    labels: dict[str, list[Label]],
    errored_traces: frozenset[str] = frozenset(),
) -> Score:
    """Match the bugs to the labels task by task; a bug citing an errored attempt is also a false positive."""
    result = Score(client, bugs=bugs)
    for bug in bugs:
        cited = sorted({evidence["trace"] for evidence in bug.get("evidence") or []} & errored_traces)
        if cited:
            result.false_bugs += 1
            result.false_positives.append(f"errored attempt {', '.join(cited)}: {bug['id']}")
    matched: set[tuple[str, int]] = set()
    for task_id, task_labels in labels.items():
        for bug in bugs:
            if task_id not in bug_tasks(bug):
                continue
            hit = [i for i, label in enumerate(task_labels) if label.must and label.matches(bug)]
            if hit:
                result.true_bugs += 1
                matched.update((task_id, i) for i in hit)
            elif not any(label.matches(bug) for label in task_labels):
                result.false_bugs += 1
                result.false_positives.append(
                    f"{task_id}: {bug['id']} ({bug['type']} on {bug.get('tool') or 'no tool'}, "
                    f"{bug['severity']})"
                )
        for i, label in enumerate(task_labels):
            if label.must:
                result.musts += 1
                if (task_id, i) in matched:
                    result.hits += 1
                else:
                    result.misses.append(f"{task_id}: {label.text()} ({label.why})")
    unlabelled = sorted({task for bug in bugs for task in bug_tasks(bug)} - set(labels))
    for task_id in unlabelled:
        result.false_positives.append(f"{task_id}: bugs on a task with no labels entry")
    return result


def quietly(function: Any, *args: Any, **kwargs: Any) -> Any:
    """Call without the steps' console output (the bench prints its own)."""
    with contextlib.redirect_stdout(io.StringIO()), console.capture():
        return function(*args, **kwargs)


def evaluate(config_path: Path, run_dir: RunDir) -> BugReport:
    """Baseline the project (reference calls, no model), then evaluate the run."""
    config = load_config(config_path)
    outcome = quietly(build_baseline, config)
    if outcome.problems:
        raise RuntimeError(f"baseline: {'; '.join(outcome.problems)}")
    return quietly(evaluate_run, config, run_dir)


def add_errored_attempts(client: str, run_dir: RunDir) -> frozenset[str]:
    """A second attempt, no answer, at each task of ERRORED_ATTEMPTS; the traces' paths in the run.

    Made from the task's first attempt in the run (its provider, runner, prompt, calls), with what
    the runners record when the server never worked (`errored`: no call, the agent's apology, every
    try's reason) or the provider failed after the agent's calls (`error`: the calls, no answer).
    """
    written = []
    for path in list_traces(run_dir):
        first = read_trace(path)
        status = ERRORED_ATTEMPTS.get(first.task_id)
        if status is None or first.repetition != 1:
            continue
        if status == "errored":
            update: dict[str, Any] = {
                "steps": [],
                "final_answer": "I could not reach the roomdesk tools, so I cannot answer this.",
                "failed_starts": [START_FAILURE, START_FAILURE],
                "status_reason": f"the agent never had a working server (2 tries): {START_FAILURE}; "
                f"{START_FAILURE}",
            }
        else:
            update = {"final_answer": None, "status_reason": PROVIDER_FAILURE[client]}
        attempt = Trace.model_validate(
            {**first.model_dump(mode="json", exclude={"totals"}), **update, "repetition": 2, "status": status}
        )
        written.append(write_trace(run_dir, attempt).relative_to(run_dir.root).as_posix())
    if len(written) != len(ERRORED_ATTEMPTS):
        raise RuntimeError(
            f"{client}: errored attempts written for {len(written)} of {len(ERRORED_ATTEMPTS)} tasks"
        )
    return frozenset(written)


def check_errored(result: Score, report: BugReport, errored_traces: frozenset[str]) -> None:
    """Whether Phase 2 left the errored attempts out: listed in BugReport.errored, in no task's figures."""
    listed = {item.trace for item in report.errored}
    runs = {stats.task_id: stats.runs for stats in report.tasks}
    counted = sorted(task for task in ERRORED_ATTEMPTS if runs.get(task, 0) != 1)
    cited = sum(1 for bug in report.bugs if {evidence.trace for evidence in bug.evidence} & errored_traces)
    missing = sorted(errored_traces - listed)
    result.errored_ok = not (missing or counted or cited)
    result.errored_check = [
        f"{len(errored_traces)} errored attempts added, {len(errored_traces & listed)} in BugReport.errored"
        + (f" (missing {', '.join(missing)})" if missing else ""),
        f"bugs citing them: {cited}; tasks whose figures count them: {len(counted)}"
        + (f" ({', '.join(counted)})" if counted else ""),
    ]


def imported_run(client: str, folder: Path) -> tuple[RunDir, Path]:
    """Import every recorded session of `client` into one run, then evaluate it."""
    config_path = script.write_project(folder)
    config = load_config(config_path)
    run_dir = None
    for session in script.load_sessions().values():
        path = script.RECORDED / client / RECORDED_FILE[client].format(task=session.task_id)
        imported = quietly(
            import_session, config, client, path, session.task_id, run=None, new_run=run_dir is None
        )
        run_dir = imported.run_dir
    assert run_dir is not None
    return run_dir, config_path


def native_run(folder: Path) -> tuple[RunDir, Path]:
    """Run the script live through the native runner (the fake model, the live server), then evaluate."""
    with FakeOpenAI(script.openai_responder("")) as fake:
        config_path = script.write_project(folder, {"fake": {"base_url": fake.base_url}})
        config = load_config(config_path)
        run_dir = create_run_dir(config.paths.runs)
        spec = parse_provider("fake/fake-model", config.providers.endpoints)
        tasks = load_tasks(config.paths.tasks).tasks
        quietly(run_phase1, config, run_dir, tasks, [spec], progress=False)
    return run_dir, config_path


def mark(ok: bool) -> str:
    return "ok" if ok else "BELOW TARGET"


def print_agreement(scores: list[Score]) -> None:
    """Bugs not reported by every client, and shared bugs whose cost differs by more than 5 %."""
    costs = {s.client: {bug["id"]: bug["token_cost_of_gap"] for bug in s.bugs} for s in scores}
    every = set.intersection(*(set(found) for found in costs.values()))
    print("\nagreement between clients (same calls, so the same bugs and costs are expected):")
    for bug_id in sorted(set.union(*(set(found) for found in costs.values())) - every):
        print(f"  only in {', '.join(c for c in costs if bug_id in costs[c])}: {bug_id}")
    for bug_id in sorted(every):
        values = [costs[client][bug_id] for client in costs]
        if max(values) > 1.05 * min(values):
            shown = ", ".join(f"{client} {costs[client][bug_id]}" for client in costs)
            print(f"  cost of gap differs: {bug_id}: {shown}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="Also write the figures and every bug to this file.")
    parser.add_argument("--keep", type=Path, help="Make the projects (runs, reports) here and keep them.")
    args = parser.parse_args()
    labels = load_labels()
    scores: list[Score] = []
    with tempfile.TemporaryDirectory() as temp:
        root = args.keep or Path(temp)
        for client in CLIENTS:
            folder = root / client
            run_dir, config_path = native_run(folder) if client == "native" else imported_run(client, folder)
            errored_traces = add_errored_attempts(client, run_dir)
            report = evaluate(config_path, run_dir)
            bugs = [bug.model_dump(mode="json") for bug in report.bugs]
            scores.append(score(client, bugs, labels, errored_traces))
            check_errored(scores[-1], report, errored_traces)

    print(
        f"Detector accuracy on bench/corpus/roomdesk ({len(labels)} tasks, "
        f"{sum(label.must for task in labels.values() for label in task)} must labels)"
    )
    print(f"{'client':<12} {'precision':>9} {'recall':>7}  {'bugs':>4} {'false':>5} {'missed':>6}")
    for s in scores:
        print(
            f"{s.client:<12} {s.precision:>9.2f} {s.recall:>7.2f}  {len(s.bugs):>4} "
            f"{s.false_bugs:>5} {s.musts - s.hits:>6}"
        )
    precision_spread = max(s.precision for s in scores) - min(s.precision for s in scores)
    recall_spread = max(s.recall for s in scores) - min(s.recall for s in scores)
    precision_marks = ", ".join(f"{s.client} {mark(s.precision >= PRECISION_TARGET)}" for s in scores)
    recall_marks = ", ".join(f"{s.client} {mark(s.recall >= RECALL_TARGET)}" for s in scores)
    print(
        f"targets: precision >= {PRECISION_TARGET} ({precision_marks}); "
        f"recall >= {RECALL_TARGET} ({recall_marks})"
    )
    print(
        f"spread between clients: precision {precision_spread:.2f}, recall {recall_spread:.2f} "
        f"(target <= {SPREAD_TARGET}: {mark(max(precision_spread, recall_spread) <= SPREAD_TARGET)})"
    )
    print("errored attempts left out (no bug, listed in BugReport.errored, in no figure):")
    for s in scores:
        print(f"  {s.client:<12} {mark(s.errored_ok)}: {'; '.join(s.errored_check)}")
    for s in scores:
        print(f"\n{s.client}: {len(s.misses)} missed, {len(s.false_positives)} false")
        for line in s.misses:
            print(f"  missed  {line}")
        for line in s.false_positives:
            print(f"  false   {line}")
    print_agreement(scores)
    if args.json:
        args.json.write_text(
            json.dumps(
                [
                    {
                        "client": s.client,
                        "precision": s.precision,
                        "recall": s.recall,
                        "misses": s.misses,
                        "false_positives": s.false_positives,
                        "errored_attempts_left_out": s.errored_ok,
                        "errored_check": s.errored_check,
                        "bugs": s.bugs,
                    }
                    for s in scores
                ],
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
