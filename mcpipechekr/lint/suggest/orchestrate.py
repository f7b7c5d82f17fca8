"""`suggest_descriptions(config, run_dir)`: an evaluated run → description_suggestions.json's content.

Order of work: read the run's bug report (and its hash), tools.json and
traces; keep what the fix loop may see (`BugReport.train_view`: nothing of a
holdout task reaches a rewrite, its prompts included); classify each bug
(`evidence.classify`: a suggestion's case, or why none); build each case's
offline rewrite (`rewrite.evidence_edits`); re-score it with every selector
(`rescore`: the lexical one always, the phase-0.5 model's when
`providers.phase05` is a model). The edit of the misleading tool ("use X
instead") is kept only when it does not make the re-score worse, on any
selector: a word-counting selector reads "not for …" as more of the same words.
With a model, it also drafts the main text (`draft.py`); the draft replaces
the offline text when the model's own selection test scores it no worse than
the offline text (for a parameter's text, which a selection of tools cannot
judge, also its place among the tool's parameters), the lexical test scores
it no worse than the current text, and lint's security scan finds nothing in
it that the current text did not have.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from mcpipechekr._util.hashing import sha256_bytes
from mcpipechekr.artifacts._base import utc_now
from mcpipechekr.artifacts.atomic import parse_model, read_model
from mcpipechekr.artifacts.bug_report import BugReport
from mcpipechekr.artifacts.description_suggestions import (
    DescriptionSuggestion,
    DescriptionSuggestions,
    Rescore,
    SkippedBug,
    TextEdit,
)
from mcpipechekr.artifacts.rundir import RunDir
from mcpipechekr.artifacts.tools_snapshot import ToolDefinition, ToolsSnapshot
from mcpipechekr.config import Config
from mcpipechekr.errors import UserError
from mcpipechekr.lint.security import scan_tools
from mcpipechekr.lint.selection import (
    LexicalSelector,
    SelectionQuery,
    Selector,
    make_selector,
    selection_queries,
)
from mcpipechekr.lint.suggest.evidence import Case, Traces, classify
from mcpipechekr.lint.suggest.rescore import Answers, answer, apply_edits, rescore, verdict
from mcpipechekr.lint.suggest.rewrite import evidence_edits, reasoning
from mcpipechekr.tasks import TaskFile, load_tasks


class Drafter(Protocol):
    """Anything that drafts a text for an edit; `label` names it in notes."""

    label: str

    def draft(self, case: Case, edit: TextEdit, tools: Sequence[ToolDefinition]) -> str | None: ...


@dataclass
class _Run:
    """What every suggestion of one run shares: its tools, queries, selectors and their first answers."""

    tools: list[ToolDefinition]
    queries: list[SelectionQuery]
    selectors: list[Selector]
    repeat: int
    before: dict[str, Answers] = field(default_factory=dict)

    def answers(self, selector: Selector, tools: Sequence[ToolDefinition]) -> Answers:
        return answer(selector, self.queries, tools, self.repeat)

    def current(self, selector: Selector) -> Answers:
        if selector.label not in self.before:
            self.before[selector.label] = self.answers(selector, self.tools)
        return self.before[selector.label]


def suggest_descriptions(
    config: Config,
    run_dir: RunDir,
    *,
    repeat: int = 1,
    model_selector: Selector | None = None,
    drafter: Drafter | None = None,
) -> DescriptionSuggestions:
    """Suggestions for the run's bugs that a description caused (see the module docstring).

    `model_selector` and `drafter` replace those `providers.phase05` names
    (other callers, tests); with `demo` there are none and the lexical
    selector alone scores. Raises UserError for a run that was not evaluated
    or has no tools.json.
    """
    if repeat < 1:
        raise UserError(f"repeat must be >= 1, got {repeat}")
    report, report_hash = _bug_report(run_dir)
    if not run_dir.tools.exists():
        raise UserError(
            f"{run_dir.tools}: the run has no tools.json, so there are no descriptions to rewrite."
        )
    snapshot = read_model(run_dir.tools, ToolsSnapshot)
    taskfile = load_tasks(config.paths.tasks) if config.paths.tasks.exists() else None
    holdout = report.holdout_task_ids() | (taskfile.holdout_ids() if taskfile is not None else set())
    tools = {tool.name: tool for tool in snapshot.tools}
    traces = Traces(run_dir.root)
    visible = {bug.id: bug for bug in report.train_view().bugs}

    cases: list[Case] = []
    skipped: list[SkippedBug] = []
    for bug in report.bugs:
        if bug.id not in visible:
            skipped.append(
                SkippedBug(bug_id=bug.id, reason="seen only in holdout tasks, which no rewrite may fit")
            )
            continue
        found = classify(visible[bug.id], tools, traces)
        if isinstance(found, str):
            skipped.append(SkippedBug(bug_id=bug.id, reason=found))
        else:
            cases.append(found)

    spec = config.providers.phase05
    if model_selector is None and not spec.is_demo and cases:
        model_selector = make_selector(spec, config)
    if drafter is None and not spec.is_demo and cases:
        from mcpipechekr.lint.suggest.draft import ModelDrafter
        from mcpipechekr.llm import build_model

        model = build_model(spec, config, purpose="drafting tool descriptions")
        drafter = ModelDrafter(f"llm:{spec}", model, timeout_s=config.timeouts.task_s)
    selectors: list[Selector] = [LexicalSelector(), *([model_selector] if model_selector is not None else [])]
    prompts = _prompts(taskfile, traces, cases, holdout)
    run = _Run(snapshot.tools, _queries(taskfile, holdout, cases, prompts), selectors, repeat)
    suggestions = shared_texts([_suggest(run, case, tools, prompts, drafter) for case in cases])
    return DescriptionSuggestions(
        run_id=run_dir.run_id,
        generated_at=utc_now(),
        bug_report_hash=report_hash,
        tools_hash=snapshot.tools_hash,
        selectors=[selector.label for selector in selectors],
        suggestions=suggestions,
        skipped=skipped,
    )


def shared_texts(suggestions: Sequence[DescriptionSuggestion]) -> list[DescriptionSuggestion]:
    """The suggestions, each with a note naming the others that rewrite one of its texts too.

    Each suggestion is built and re-scored on its own, from the run's texts; two that change the
    same text (two bugs pointing away from one tool) must be merged by whoever applies them, and
    the second one's `current` is no longer the text once the first is applied.
    """
    owners: dict[tuple[str, str | None], list[str]] = {}
    for item in suggestions:
        for edit in item.edits():
            owners.setdefault((edit.tool, edit.parameter), []).append(item.bug_id)
    out = []
    for item in suggestions:
        notes = list(item.notes)
        for edit in item.edits():
            others = [bug_id for bug_id in owners[(edit.tool, edit.parameter)] if bug_id != item.bug_id]
            if others:
                where = f"`{edit.tool}.{edit.parameter}`" if edit.parameter else f"`{edit.tool}`"
                notes.append(
                    f"the text of {where} is also rewritten for {', '.join(others)}: apply the rewrites "
                    "together (each re-score counts its own rewrite alone)"
                )
        out.append(item.model_copy(update={"notes": notes}) if notes != item.notes else item)
    return out


def _bug_report(run_dir: RunDir) -> tuple[BugReport, str]:
    """The run's bug report and the hash of the bytes it was read from."""
    path = run_dir.bug_report
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise UserError(
            f"{path}: the run has not been evaluated, so there are no bugs to rewrite descriptions for. "
            f"Evaluate it first: `mcpipechekr evaluate {run_dir.run_id}`."
        ) from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read the bug report: {exc.strerror or exc}") from None
    return parse_model(path, raw, BugReport, fast=True), sha256_bytes(raw)


def _task_ids(case: Case, holdout: set[str]) -> list[str]:
    """The bug's tasks the rewrite may learn from, in the report's order."""
    ids = [*case.bug.task_ids, *(item.task_id for item in case.bug.evidence)]
    if case.bug.task_id:
        ids.insert(0, case.bug.task_id)
    return [task_id for task_id in dict.fromkeys(ids) if task_id not in holdout]


def _prompts(
    taskfile: TaskFile | None, traces: Traces, cases: Sequence[Case], holdout: set[str]
) -> dict[str, str]:
    """Each case's task's prompt: tasks.yaml's, else the one its trace recorded."""
    known = {task.task_id: task.prompt.strip() for task in taskfile.tasks} if taskfile is not None else {}
    prompts: dict[str, str] = {}
    for case in cases:
        for task_id in _task_ids(case, holdout):
            if task_id in known:
                prompts[task_id] = known[task_id]
                continue
            for item in case.bug.evidence:
                trace = traces.get(item.trace) if item.task_id == task_id else None
                if trace is not None:
                    prompts[task_id] = trace.prompt.strip()
                    break
    return prompts


def _queries(
    taskfile: TaskFile | None, holdout: set[str], cases: Sequence[Case], prompts: dict[str, str]
) -> list[SelectionQuery]:
    """Lint's queries of the train tasks and the cases, plus each case's task that has no query of its own."""
    train = (
        taskfile.model_copy(
            update={"tasks": [task for task in taskfile.tasks if task.task_id not in holdout]}
        )
        if taskfile is not None
        else None
    )
    queries = selection_queries(train)
    sources = {query.source for query in queries}
    for case in cases:
        for task_id in _task_ids(case, holdout):
            if f"task:{task_id}" not in sources and task_id in prompts:
                queries.append(SelectionQuery(prompts[task_id], case.tool, f"task:{task_id}"))
                sources.add(f"task:{task_id}")
    return queries


def _suggest(
    run: _Run, case: Case, tools: dict[str, ToolDefinition], prompts: dict[str, str], drafter: Drafter | None
) -> DescriptionSuggestion:
    task_ids = [task_id for task_id in _task_ids(case, set()) if task_id in prompts]
    focus = [i for i, query in enumerate(run.queries) if query.source in {f"task:{t}" for t in task_ids}]
    main, also = evidence_edits(case, tools, [prompts[task_id] for task_id in task_ids])
    notes: list[str] = []
    chosen = [main]
    scored = {
        selector.label: run.answers(selector, apply_edits(run.tools, chosen)) for selector in run.selectors
    }
    if also:
        edits = [main, *also]
        with_also = {
            selector.label: run.answers(selector, apply_edits(run.tools, edits)) for selector in run.selectors
        }
        worse = [
            label
            for label in scored
            if verdict(run.queries, focus, scored[label], with_also[label], len(run.tools)) == "worse"
        ]
        if not worse:
            chosen, scored = edits, with_also
        else:
            named = ", ".join(f"`{edit.tool}`" for edit in also)
            notes.append(
                f"the pointer added to {named} made the selection test worse ({', '.join(worse)}), "
                "so it is left out"
            )
    origin = "evidence"
    if drafter is not None:
        draft = drafter.draft(case, main, run.tools)
        kept, why = _judge_draft(run, focus, case, main, chosen, scored, draft)
        if kept is not None:
            chosen, scored, origin = kept
        if why:
            notes.append(f"{drafter.label}: {why}")
    after_tools = apply_edits(run.tools, chosen)
    notes += _security_notes(run.tools, after_tools, {edit.tool for edit in chosen})
    rescores = [
        _figures(run, selector, focus, scored[selector.label], after_tools, case)
        for selector in run.selectors
    ]
    head, rest = chosen[0], chosen[1:]
    return DescriptionSuggestion(
        bug_id=case.bug.id,
        bug_type=case.bug.type,
        kind=case.kind,
        tool=head.tool,
        parameter=head.parameter,
        current=head.current,
        proposed=head.proposed,
        also=rest,
        origin=origin,  # type: ignore[arg-type]
        reasoning=reasoning(case),
        quotes=case.quotes,
        rescores=rescores,
        notes=notes,
    )


def _judge_draft(
    run: _Run,
    focus: list[int],
    case: Case,
    main: TextEdit,
    chosen: list[TextEdit],
    scored: dict[str, Answers],
    draft: str | None,
) -> tuple[tuple[list[TextEdit], dict[str, Answers], str] | None, str | None]:
    """The draft's edits and answers when it is kept, and a note on what happened to it."""
    if draft is None:
        return None, "no usable draft (empty or too long); the offline text stays"
    if draft == main.proposed:
        return None, None
    edits = [main.model_copy(update={"proposed": draft}), *chosen[1:]]
    after = apply_edits(run.tools, edits)
    if _security_notes(run.tools, after, {main.tool}):
        return None, "its draft tripped lint's security scan and was dropped"
    answers = {selector.label: run.answers(selector, after) for selector in run.selectors}
    lexical, model = run.selectors[0].label, run.selectors[-1].label
    against_offline = verdict(run.queries, focus, scored[model], answers[model], len(run.tools))
    if against_offline == "worse" or _parameter_worse(run, focus, case, chosen, scored, edits, answers):
        return None, f"its draft scored worse than the offline text and was not kept: {draft}"
    if _figures(run, run.selectors[0], focus, answers[lexical], after, case).verdict == "worse":
        return None, f"its draft scored worse than the current text ({lexical}) and was not kept: {draft}"
    return (edits, answers, "model"), "drafted the text; it scored no worse than the offline one"


def _parameter_worse(
    run: _Run,
    focus: list[int],
    case: Case,
    offline: list[TextEdit],
    offline_answers: dict[str, Answers],
    draft: list[TextEdit],
    draft_answers: dict[str, Answers],
) -> bool:
    """For a parameter's text: whether the draft puts the parameter lower than the offline text does.

    A model's selection test picks tools, not parameters, so it cannot judge a parameter's text; the
    parameter's place among its tool's parameters for the bug's tasks does.
    """
    if case.parameter is None:
        return False
    lexical = run.selectors[0].label
    figures = rescore(
        lexical,
        run.queries,
        focus,
        offline_answers[lexical],
        draft_answers[lexical],
        tools=apply_edits(run.tools, offline),
        after_tools=apply_edits(run.tools, draft),
        concern=[],
        parameter=(case.tool, case.parameter),
    )
    before = sum(rank.rank_before or rank.parameters + 1 for rank in figures.parameter)
    after = sum(rank.rank_after or rank.parameters + 1 for rank in figures.parameter)
    return after > before


def _figures(
    run: _Run,
    selector: Selector,
    focus: list[int],
    after: Answers,
    after_tools: list[ToolDefinition],
    case: Case,
) -> Rescore:
    concern = [case.tool, *([case.misled] if case.misled else [])]
    return rescore(
        selector.label,
        run.queries,
        focus,
        run.current(selector),
        after,
        tools=run.tools,
        after_tools=after_tools,
        concern=concern,
        parameter=(case.tool, case.parameter) if case.parameter else None,
    )


def _security_notes(
    before: Sequence[ToolDefinition], after: Sequence[ToolDefinition], edited: set[str]
) -> list[str]:
    """A note per security finding the proposed texts have that the current ones did not."""
    old = Counter((f.tool, f.rule_id) for f in scan_tools(before) if f.tool in edited)
    new = [f for f in scan_tools(after) if f.tool in edited]
    notes = []
    for finding in new:
        key = (finding.tool, finding.rule_id)
        if old[key] > 0:
            old[key] -= 1
            continue
        notes.append(
            f"the proposed text of `{finding.tool}` trips {finding.rule_id} ({finding.span!r}): review it"
        )
    return notes
