"""Phase 3: fix the approved bugs one at a time, commit each fix, and prove the server still starts.

The loop ("Ralph Wiggum" style): for each bug the reviewer approved
(`review.approved_bugs`, in the review's fix order; only bugs the server can
fix are approved: `agent` bugs, how the model
behaved, have no server-side fix and are never given to the agent), the same
prompt is given to a fresh agent process until the agent prints the
completion promise or `fix.max_iterations` runs are spent. The work tree is
not reset between runs, so a later run continues where an earlier one stopped.

- Nothing happens without the human's approval of exactly this bug report
  (`review.approved_report`, checked before anything else).
- When `fix.test_command` is set, a run that promises completion is followed by
  the repository's tests (`fix.repo_tests`); failing tests are never
  committed: their output is the next run's feedback (the prompt says they
  failed and shows the end of it), and that run counts toward
  `fix.max_iterations` like any other.
- Then the server is restarted on the changed work tree and must pass its
  health check (`server.health`) before anything is committed: a change that
  breaks the server is never committed. The health check's error is the next
  run's feedback, like failing tests.
- A completed bug becomes one commit, `fix: <bug id>`, holding only the files
  the agent changed (`fix.changes`); nothing is ever pushed, and the agent's
  own git cannot push either (`fix.guards`).
- After every agent run, git's control files (hooks, config, info/) are put
  back as they were and the agent's own commits are folded back; fix.json
  names each thing undone (`undone`).
- A bug whose runs are spent, or whose agent claims success without changing a
  file, is recorded as unresolved, the agent's changes are undone, and the
  loop goes on with the next bug. When its last change had broken the server,
  the server is restarted on the restored code; only if that fails too (what
  broke lies outside the repository) does the loop halt, recording the remaining
  bugs as skipped and raising `ServerHalt`.

fix.json is rewritten after every bug, so an interrupted loop still says which
commits it made. A fix stopped part-way (Ctrl-C, SIGTERM, a crash, or a
SIGKILL that the next loop cleans up after) ends the agent's process group,
keeps its edits as a patch in the run folder and restores the work tree; the
next loop on the run goes on with the bugs not yet committed
(`fix.interruption`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import git
from rich.console import Console

from mcpipechekr._util import progress
from mcpipechekr._util.console import console as default_console
from mcpipechekr.artifacts import RunDir, utc_now, write_model
from mcpipechekr.artifacts.atomic import atomic_write_text
from mcpipechekr.artifacts.bug_report import Bug, BugReport
from mcpipechekr.artifacts.description_suggestions import DescriptionSuggestions
from mcpipechekr.artifacts.fix_record import (
    AgentRun,
    BugFix,
    BugInProgress,
    FixHealth,
    FixRecord,
    TestRun,
    read_fix_record,
)
from mcpipechekr.artifacts.review import Review
from mcpipechekr.config import Config, Redactor
from mcpipechekr.errors import ServerHalt, UserError
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.lifecycle.store import load_finding
from mcpipechekr.findings.promotion.bugs import bug_finding_id
from mcpipechekr.findings.server_identity import server_key
from mcpipechekr.fix.agent_group import end_leftover, record_group
from mcpipechekr.fix.agents import AgentResult, FindingsServer, FixAgent, resolve_agent, sandbox_mode
from mcpipechekr.fix.changes import (
    Baseline,
    Exclusions,
    changed_files,
    commit_paths,
    fold_agent_commits,
    head_sha,
    is_ancestor,
    open_repo,
    require_clean,
    restore,
    snapshot,
)
from mcpipechekr.fix.evidence import evidence_lines, file_layout, suggestions_for
from mcpipechekr.fix.guards import GitControl
from mcpipechekr.fix.interruption import (
    FIX_FOLDER,
    clean_killed_fixes,
    fix_exclusions,
    interrupted_line,
    shelve_edits,
    sigterm_as_ctrl_c,
)
from mcpipechekr.fix.prompt import FailedHealth, FailedTests, build_fix_prompt, has_promise
from mcpipechekr.fix.repo_tests import display_command, run_tests
from mcpipechekr.review.bugs import approved_bugs
from mcpipechekr.review.decision import approved_report
from mcpipechekr.server.connection import HealthReport
from mcpipechekr.server.lifecycle import ServerUnderTest, server_under_test
from mcpipechekr.server.workspace import mark_fix_end


@dataclass
class _Context:
    config: Config
    run_dir: RunDir
    repo: git.Repo
    agent: FixAgent | None
    exclusions: Exclusions
    annotations: list[str]
    redactor: Redactor
    console: Console
    restart: Callable[[], HealthReport]
    findings_home: Home | None
    record: FixRecord
    earlier_patches: dict[str, list[str]]
    suggestions: DescriptionSuggestions | None


def run_fix_loop(
    config: Config,
    run_dir: RunDir,
    *,
    server: ServerUnderTest | None = None,
    console: Console | None = None,
    again: bool = False,
    findings_home: Home | None = None,
) -> FixRecord:
    """Fix the approved bugs of `run_dir` in `config.server.repo`; write and return fix.json's record.

    `server` is the harness's live server, restarted on each change to check; without
    one, a fresh server is started and stopped for each health check. `again`
    allows a second fix loop on a run that already has a finished fix.json.
    `findings_home`: the project's findings, served to the agent through
    `mcpipechekr serve` (the config must have been read from a file, which
    serve is started with) so it can verify its fix before it claims it.

    Raises UserError when the report is not approved (or the approval is
    stale), the repository is missing or has uncommitted tracked changes, or
    the agent cannot run; ServerHalt when the server is unhealthy with the agent's changes undone.
    """
    out = console or default_console
    review, report = approved_report(run_dir)
    earlier = read_fix_record(run_dir.fix_record) if run_dir.fix_record.exists() else None
    fixed = earlier is not None and earlier.finished_at is not None
    if fixed and not again and earlier is not None and earlier.bug_report_hash == review.bug_report_hash:
        raise UserError(
            f"{run_dir.fix_record}: run {run_dir.run_id} was already fixed "
            f"({len(earlier.commits)} commit(s)); its next run checks the fixes. "
            "Pass --again to run the fix loop on this report once more."
        )
    repo = open_repo(config.server.repo)
    try:
        require_clean(repo)
        runs = True
    except UserError:
        runs = False  # _run_loop refuses it, naming the files; the tree stays the user's
    try:
        with sigterm_as_ctrl_c():
            return _run_loop(config, run_dir, repo, review, report, earlier, out, server, findings_home)
    finally:
        if runs:
            mark_fix_end(repo)  # the tree as the loop leaves it: a later change is none of its own
        repo.close()


def _run_loop(
    config: Config,
    run_dir: RunDir,
    repo: git.Repo,
    review: Review,
    report: BugReport,
    earlier: FixRecord | None,
    out: Console,
    server: ServerUnderTest | None,
    findings_home: Home | None,
) -> FixRecord:
    """`run_fix_loop` once the approval is checked and the repository open."""
    repo_root = Path(repo.working_dir)
    exclusions = fix_exclusions(config, repo_root, run_dir)
    if clean_killed_fixes(config, [run_dir], out) and run_dir.fix_record.exists():
        earlier = read_fix_record(run_dir.fix_record)  # its killed bug is recorded now
    require_clean(repo)
    resumed = _resumable(earlier, review.bug_report_hash, repo)
    carried = [entry for entry in resumed.bugs if entry.status == "committed"] if resumed else []
    done = {entry.bug_id for entry in carried}
    bugs = [bug for bug in approved_bugs(review, report) if bug.id not in done]
    agent = resolve_agent(config, repo_root, _findings_server(config, findings_home)) if bugs else None
    restart = _restarter(config, run_dir, server)
    record = FixRecord(
        run_id=run_dir.run_id,
        bug_report_hash=review.bug_report_hash,
        agent=config.fix.agent,
        provider=str(agent.provider) if agent is not None and agent.provider is not None else None,
        repo=str(repo_root),
        sandbox=sandbox_mode(config),
        base_commit=resumed.base_commit if resumed is not None and carried else head_sha(repo),
        started_at=utc_now(),
        bugs=carried,
    )
    context = _Context(
        config=config,
        run_dir=run_dir,
        repo=repo,
        agent=agent,
        exclusions=exclusions,
        annotations=[annotation.text for annotation in review.annotations],
        redactor=config.redactor,
        console=out,
        restart=restart,
        findings_home=findings_home,
        record=record,
        earlier_patches=_earlier_patches(resumed),
        suggestions=suggestions_for(run_dir, review.bug_report_hash),
    )
    write_model(run_dir.fix_record, record)
    if record.sandbox == "off" and bugs:
        out.print(
            f"fix.sandbox is off: the {config.fix.agent} fix agent runs unconfined, with your rights "
            "(it can write outside the repository, push, and leave processes running).",
            markup=False,
        )
    if carried:
        out.print(
            f"{run_dir.run_id}: going on from an interrupted fix loop; already committed: "
            + ", ".join(entry.bug_id for entry in carried),
            markup=False,
        )
    if not bugs and not carried:
        out.print(
            f"{run_dir.run_id}: the approved report lists no bugs the server can fix; nothing to fix.",
            markup=False,
        )
    try:
        _fix_all(context, bugs)
    except KeyboardInterrupt:
        out.print(interrupted_line(record, run_dir), markup=False)
        raise
    record.finished_at = utc_now()
    write_model(run_dir.fix_record, record)
    return record


def _fix_all(context: _Context, bugs: list[Bug]) -> None:
    """Each bug in turn, fix.json rewritten after each; halt when the server stays broken."""
    record, run_dir, out = context.record, context.run_dir, context.console
    for position, bug in enumerate(bugs):
        out.print(f"[{position + 1}/{len(bugs)}] {bug.id} (gap {bug.token_cost_of_gap} tokens)", markup=False)
        entry = _fix_one(context, bug)
        record.bugs.append(entry)
        record.in_progress = None
        write_model(run_dir.fix_record, record)
        _print_outcome(out, entry)
        if entry.status == "committed":
            record.health = _committed_health(entry)
        elif _left_server_broken(entry):
            health = _check_health(context.restart, context.repo)
            if not health.healthy:
                record.health = health
                record.bugs.extend(
                    BugFix(
                        bug_id=later.id,
                        status="skipped",
                        iterations=0,
                        reason=f"not attempted: the server is unhealthy with {bug.id}'s changes undone",
                    )
                    for later in bugs[position + 1 :]
                )
                record.finished_at = utc_now()
                write_model(run_dir.fix_record, record)
                raise ServerHalt(_broken_message(context.repo, health, run_dir))


def _resumable(earlier: FixRecord | None, bug_report_hash: str, repo: git.Repo) -> FixRecord | None:
    """An unfinished fix.json for the same approved report whose commits are all still in HEAD's history.

    Its committed bugs are not redone. A report approved anew, or commits that
    are gone (reset away by hand), start the loop afresh.
    """
    if earlier is None or earlier.finished_at is not None or earlier.bug_report_hash != bug_report_hash:
        return None
    if not all(is_ancestor(repo, commit) for commit in earlier.commits):
        return None
    return earlier


def _earlier_patches(resumed: FixRecord | None) -> dict[str, list[str]]:
    """Bug id -> the patches its interrupted attempts left, oldest first."""
    patches: dict[str, list[str]] = {}
    for entry in resumed.bugs if resumed is not None else []:
        kept = [*entry.earlier_patches, *([entry.patch] if entry.patch else [])]
        if kept:
            patches.setdefault(entry.bug_id, []).extend(kept)
    return patches


def _findings_server(config: Config, home: Home | None) -> FindingsServer | None:
    """`mcpipechekr serve` for this project, when there is a findings home and a config file to name."""
    if home is None or config.source is None:
        return None
    from mcpipechekr.findings.views.serve import serve_argv, serve_env  # the MCP server stack, only here

    return FindingsServer(tuple(serve_argv(config.source)), serve_env(home))


def _verifiable_finding(context: _Context, bug: Bug) -> str | None:
    """The bug's finding id when the agent can verify it through the findings server, else None."""
    if context.findings_home is None or context.agent is None or not context.agent.findings:
        return None
    finding = load_finding(context.findings_home, bug_finding_id(bug.id, server_key(context.config.server)))
    return finding.id if finding is not None and finding.probe and finding.tool else None


def _fix_one(context: _Context, bug: Bug) -> BugFix:
    """Run the agent on one bug until it promises completion or runs out of iterations; commit or undo."""
    agent = context.agent
    assert agent is not None
    folder = context.run_dir.root / FIX_FOLDER
    prompt = _prompt(context, bug, None)
    prompt_file = atomic_write_text(folder / f"{bug.id}.prompt.md", prompt)
    entry = BugFix(
        bug_id=bug.id,
        status="unresolved",
        iterations=0,
        agent_command=context.redactor.redact(agent.display(prompt_file, bug.id)),
        prompt=prompt_file.relative_to(context.run_dir.root).as_posix(),
        earlier_patches=context.earlier_patches.get(bug.id, []),
    )
    baseline = snapshot(context.repo)
    control = GitControl.snapshot(context.repo)
    context.record.in_progress = BugInProgress(
        bug_id=bug.id, base_commit=baseline.commit, untracked=baseline.untracked
    )
    write_model(context.run_dir.fix_record, context.record)
    try:
        completed, last = _run_agent(context, bug, entry, baseline, control, prompt, prompt_file)
    except BaseException as exc:  # Ctrl-C, SIGTERM or a crash mid-bug: no half-made fix stays behind
        _interrupted(context, entry, baseline, control, exc)
        raise
    changes = changed_files(context.repo, baseline, context.exclusions)
    entry.files_changed = changes.paths
    if completed and changes.paths:
        entry.commit = commit_paths(context.repo, changes.paths, f"fix: {bug.id}")
        entry.status = "committed"
        return entry
    tests = entry.runs[-1].tests if entry.runs else None
    health = entry.runs[-1].health if entry.runs else None
    if completed:
        entry.reason = "the agent printed the completion promise but changed no file: nothing to commit"
    elif health is not None and not health.healthy:
        entry.reason = context.redactor.redact(
            f"the server failed its health check with the agent's change after {entry.iterations} run(s): "
            f"{_first_line(health.error)}"
        )
    elif tests is not None and not tests.passed:
        entry.reason = context.redactor.redact(
            f"the tests still failed after {entry.iterations} run(s): {_tests_summary(tests)}"
        )
    else:
        assert last is not None
        entry.reason = context.redactor.redact(
            f"no completion promise after {entry.iterations} run(s); last run: {_run_summary(last)}"
        )
    restore(context.repo, baseline, changes)
    if changes.rewritten_untracked:
        entry.reason += (
            "; left as the agent changed them (untracked before, so there was no copy to restore): "
            + ", ".join(changes.rewritten_untracked)
        )
    return entry


def _prompt(context: _Context, bug: Bug, failure: FailedTests | FailedHealth | None) -> str:
    """The bug's prompt, redacted; with `failure`, the one that feeds failing tests or health back."""
    test_command = context.config.fix.test_command
    prompt = build_fix_prompt(
        bug,
        context.annotations,
        server_name=context.config.server.name,
        evidence=evidence_lines(bug, context.run_dir),
        layout=file_layout(context.repo),
        test_command=display_command(test_command, Path(context.repo.working_dir)) if test_command else None,
        feedback=failure,
        finding_id=_verifiable_finding(context, bug),
        suggestion=context.suggestions.for_bug(bug.id) if context.suggestions is not None else None,
    )
    return context.redactor.redact(prompt)


def _run_agent(
    context: _Context,
    bug: Bug,
    entry: BugFix,
    baseline: Baseline,
    control: GitControl,
    prompt: str,
    prompt_file: Path,
) -> tuple[bool, AgentResult | None]:
    """Fresh agent runs until one promises completion, the tests pass and the server is healthy.

    Returns (completed, last result). The prompt stays the same from run to
    run, except after failing tests or a failed health check: the next run
    gets a prompt with what failed, written beside the first.
    """
    agent = context.agent
    assert agent is not None
    folder = prompt_file.parent
    last: AgentResult | None = None
    current, current_file = prompt, prompt_file

    def started(pid: int) -> None:  # named in fix.json at once: a killed loop's successor ends it
        assert context.record.in_progress is not None
        context.record.in_progress.agent = record_group(pid)
        write_model(context.run_dir.fix_record, context.record)

    for iteration in range(1, context.config.fix.max_iterations + 1):
        progress.detail(f"{bug.id}: agent run {iteration} started")

        def said(line: str, run_number: int = iteration) -> None:  # the agent's latest line, live
            progress.detail(f"{bug.id}: agent run {run_number}: {line}")

        last = agent.run(current, current_file, bug.id, on_start=started, on_line=said)
        entry.iterations = iteration
        log = folder / f"{bug.id}.run-{iteration}.log"
        atomic_write_text(log, context.redactor.redact(_log_text(last)))
        promised = has_promise(last.stdout, current)
        run = AgentRun(
            iteration=iteration,
            exit_code=last.exit_code,
            timed_out=last.timed_out,
            promise=promised,
            elapsed_s=round(last.elapsed_s, 3),
            log=log.relative_to(context.run_dir.root).as_posix(),
            prompt=None if current_file == prompt_file else _relative(context, current_file),
        )
        entry.runs.append(run)
        run.refused = context.redactor.redact(last.refused)
        for line in run.refused:
            context.console.print(f"  refused by the sandbox: {line}", markup=False)
        undone = _undo_outside_work_tree(context, baseline, control)
        entry.undone += undone
        for line in undone:
            context.console.print(f"  undone: {line}", markup=False)
        if not (promised and last.exit_code == 0 and not last.timed_out):
            context.console.print(f"  run {iteration}: {_run_summary(last)}", markup=False)
            continue
        if not changed_files(context.repo, baseline, context.exclusions).paths:
            return True, last  # nothing to test or restart; the caller reports the empty claim
        failure: FailedTests | FailedHealth
        if context.config.fix.test_command is not None:
            run.tests = _run_repo_tests(context)
            if not run.tests.passed:
                context.console.print(f"  run {iteration}: {_tests_summary(run.tests)}", markup=False)
                failure = FailedTests(
                    command=run.tests.command,
                    exit_code=run.tests.exit_code,
                    timed_out=run.tests.timed_out,
                    output_tail=run.tests.output_tail,
                )
                current = _prompt(context, bug, failure)
                current_file = atomic_write_text(folder / f"{bug.id}.prompt-{iteration + 1}.md", current)
                continue
        progress.detail(f"{bug.id}: restarting the server with this change")
        run.health = _check_health(context.restart, context.repo)
        if run.health.healthy:
            context.console.print(f"  run {iteration}: {_health_line(run.health)}", markup=False)
            return True, last
        run.health.error = context.redactor.redact(run.health.error or "")
        context.console.print(
            f"  run {iteration}: the server failed its health check with this change: "
            f"{_first_line(run.health.error)}",
            markup=False,
        )
        failure = FailedHealth(error=run.health.error)
        current = _prompt(context, bug, failure)
        current_file = atomic_write_text(folder / f"{bug.id}.prompt-{iteration + 1}.md", current)
    return False, last


def _relative(context: _Context, path: Path) -> str:
    return path.relative_to(context.run_dir.root).as_posix()


def _run_repo_tests(context: _Context) -> TestRun:
    """`fix.test_command` once in the repository, recorded redacted."""
    fix = context.config.fix
    assert fix.test_command is not None
    repo_root = Path(context.repo.working_dir)
    outcome = run_tests(fix.test_command, repo_root, timeout_s=fix.test_timeout_s, env={})
    redact = context.redactor.redact
    return TestRun(
        command=redact(display_command(fix.test_command, repo_root)),
        exit_code=outcome.exit_code,
        timed_out=outcome.timed_out,
        passed=outcome.passed,
        elapsed_s=round(outcome.elapsed_s, 3),
        output_tail=redact(outcome.output_tail),
    )


def _tests_summary(tests: TestRun) -> str:
    """How a failed test run ended and its last line of output, on one line."""
    ended = "timed out" if tests.timed_out else f"exit code {tests.exit_code}"
    said = [line.strip() for line in tests.output_tail.splitlines() if line.strip()]
    return f"the tests failed ({ended})" + (f": {said[-1][:300]}" if said else "")


def _undo_outside_work_tree(context: _Context, baseline: Baseline, control: GitControl) -> list[str]:
    """Fold the agent's own commits and put git's control files back; one line per thing undone."""
    undone = context.redactor.redact(control.restore(context.repo))
    folded = fold_agent_commits(context.repo, baseline)
    if folded:
        undone.append(f"{folded} commit(s) made by the agent itself: folded back into the one fix commit")
    return undone


def _interrupted(
    context: _Context, entry: BugFix, baseline: Baseline, control: GitControl, exc: BaseException
) -> None:
    """Best effort: end the agent, keep its edits as a patch, restore the tree, record the bug interrupted.

    Never hides the original error: a failing step is skipped, and fix.json is
    still written. `run_cli` has normally stopped the agent's group already;
    ending it here too covers an agent still running when the error came from elsewhere.
    """
    record, run_dir = context.record, context.run_dir
    progress = record.in_progress
    with contextlib.suppress(Exception):
        if progress is not None and progress.agent is not None:
            end_leftover(progress.agent)
    with contextlib.suppress(Exception):
        entry.undone += context.redactor.redact(control.restore(context.repo))
    patch = None
    with contextlib.suppress(Exception):
        patch = shelve_edits(
            context.repo, baseline, context.exclusions, run_dir.root / FIX_FOLDER, entry.bug_id
        )
    interrupt = isinstance(exc, KeyboardInterrupt)
    cause = "Ctrl-C or SIGTERM" if interrupt else _first_line(str(exc) or type(exc).__name__)
    entry.status = "interrupted"
    entry.reason = context.redactor.redact(f"interrupted after {entry.iterations} finished run(s): {cause}")
    entry.patch = patch.relative_to(run_dir.root).as_posix() if patch is not None else None
    record.bugs.append(entry)
    record.in_progress = None
    with contextlib.suppress(Exception):
        write_model(run_dir.fix_record, record)


def _committed_health(entry: BugFix) -> FixHealth:
    """The health check that let the fix be committed, now naming the commit whose files it ran."""
    checked = entry.runs[-1].health if entry.runs else None
    assert checked is not None and checked.healthy  # `_run_agent` completes only after a healthy check
    return checked.model_copy(update={"after_commit": entry.commit})


def _left_server_broken(entry: BugFix) -> bool:
    """Whether a run of the bug left a change the server failed on (now undone: restart to be sure)."""
    return any(run.health is not None and not run.health.healthy for run in entry.runs)


def _first_line(text: str | None) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[0][:300] if lines else "no detail"


def _log_text(result: AgentResult) -> str:
    status = "timed out" if result.timed_out else f"exit code {result.exit_code}"
    return f"{result.stdout}\n--- stderr ---\n{result.stderr}\n--- {status}, {result.elapsed_s:.1f}s ---\n"


def _run_summary(result: AgentResult) -> str:
    """How a run ended and the last thing it said, on one line."""
    if result.timed_out:
        ended = "timed out"
    elif result.exit_code == 0:
        ended = "exited 0 without the promise"
    else:
        ended = f"exited with code {result.exit_code}"
    # what it last said to its user; its own diagnostics (stderr) only when it said nothing
    said = [line.strip() for line in result.stdout.splitlines() if line.strip()] or [
        line.strip() for line in result.stderr.splitlines() if line.strip()
    ]
    return f"{ended}" + (f" ({said[-1][:300]})" if said else "")


def _restarter(config: Config, run_dir: RunDir, server: ServerUnderTest | None) -> Callable[[], HealthReport]:
    """Restart the live server when there is one, else start a fresh one just for the check."""
    if server is not None:
        return server.restart

    def fresh() -> HealthReport:
        with server_under_test(config, run_dir.server_stderr_log) as live:
            assert live.health is not None
            return live.health

    return fresh


def _check_health(restart: Callable[[], HealthReport], repo: git.Repo) -> FixHealth:
    after = head_sha(repo)
    try:
        report = restart()
    except ServerHalt as halt:
        return FixHealth(healthy=False, after_commit=after, error=halt.message, checked_at=utc_now())
    return FixHealth(
        healthy=True,
        tools=len(report.tools),
        elapsed_s=round(report.elapsed_s, 3),
        after_commit=after,
        checked_at=utc_now(),
    )


def _health_line(health: FixHealth) -> str:
    """`server restarted: healthy, 3 tool(s) in 0.72s`: the restart after a change, as a line of its own."""
    took = f" in {health.elapsed_s:.2f}s" if health.elapsed_s is not None else ""
    return f"server restarted: healthy, {health.tools} tool(s){took}"


def _broken_message(repo: git.Repo, health: FixHealth, run_dir: RunDir) -> str:
    head = repo.head.commit
    return (
        f'the server is not healthy at {head.hexsha[:7]} "{head.summary}" in {repo.working_dir}, with the '
        "fix agent's changes to the repository undone: something the loop cannot undo is broken (a file "
        "outside the repository, the server's data or environment). The fix loop stopped there.\n"
        f"{health.error}\n"
        f"Repair the server, then run the loop again. What ran is recorded in {run_dir.fix_record}."
    )


def _print_outcome(out: Console, entry: BugFix) -> None:
    if entry.status == "committed":
        assert entry.commit is not None
        files = ", ".join(entry.files_changed)
        out.print(
            f"  committed {entry.commit[:7]} fix: {entry.bug_id} after {entry.iterations} run(s): {files}",
            markup=False,
        )
    else:
        out.print(f"  {entry.status}: {entry.reason}", markup=False)
