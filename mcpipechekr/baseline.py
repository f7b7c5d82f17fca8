"""Phase 0: the accepted answer of each task, recorded in runs/baseline.json.

How a task gets its result:

- with `reference_calls`, they are executed in order against the server, with
  no model (`ServerUnderTest`), provided each calls a tool annotated read-only
  or the task says `allow_writes: true`; otherwise nothing is called and the
  run stops with every such call's tasks.yaml line (`write_call_problems`).
  The *result* of a deterministic task is the identifying values of the
  LAST call's result (see `evaluate.correctness.identifying_values`: the scalars of a count, or the
  records of a list, each identified by its id, subject, title, name or date),
  stored as `{"values": [[...], ...], "match": "all"|"any"}` next to the last
  call's tool, arguments and full structured content. When the task has an
  `expected_result`, its values are the ones stored (`expected_values`: every
  scalar, string, list item and mapping value; a list also as a `closed` set)
  and the reference result must agree with them. An open-ended task's result
  is every call's content;
- without reference calls, the task is run by the phase-0 agent (the runner
  for `providers.phase0`, through the `Runner` interface, with no call budget)
  and its final answer is the result.

A separate evaluator then scores how plausible each result is: an LLM judge
when `providers.phase0` names a model, else deterministic rules (see
`RulesJudge`). The score and its reason are recorded, never used to reject a
result: the baseline is for a person to trust or edit.

A deterministic task whose result names nothing checkable (free text without
an `expected_result`, an empty expected_result) gets a warning in its entry
(`task_warnings`): its answers will be reported `unchecked`, not correct.

The file is not rebuilt on every loop: `build_baseline` only adds tasks that
have no entry yet, and rebuilds the entries that are *stale*, unless asked to
regenerate them all. An entry records the `tools_hash` of the tool definitions
it was made against; when the server now offers other definitions (a fix added
a sort parameter), the entry is stale: its minimum (calls, reference tokens)
may no longer be the cheapest, and a trace that beats it would show an
efficiency above 1. A stale entry of a deterministic task with reference calls
is rebuilt from them AND tried with the phase-0 agent: when the agent's answer
agrees with the result (`probe_minimum`) in fewer calls or fewer tokens, the
entry's minimum takes the fewer calls and the fewer tokens of the two (the
result stays the reference calls'). A loop that needs a baseline
and finds none stops with a message saying how to make one
(`require_baseline`).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import mcp_types
import orjson
from pydantic import BaseModel, Field

from mcpipechekr._util.tempfiles import own_temp_prefix
from mcpipechekr._util.yamlsrc import ConfigFileError, Problem
from mcpipechekr.artifacts import read_model, utc_now, write_model
from mcpipechekr.artifacts.baseline import Baseline, BaselineEntry
from mcpipechekr.artifacts.rundir import baseline_path
from mcpipechekr.artifacts.tools_snapshot import snapshot_tools
from mcpipechekr.artifacts.trace import ToolCall, tool_call_from_result
from mcpipechekr.config import Config
from mcpipechekr.errors import UserError
from mcpipechekr.evaluate.correctness import (
    NOTHING_CHECKABLE,
    check_deterministic,
    fits_derived,
    identifying_payload,
    similarity,
)
from mcpipechekr.evaluate.costing import sequence_tokens
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.runners.base import AgentServer, Runner, RunRequest
from mcpipechekr.server.annotations import write_risk
from mcpipechekr.server.lifecycle import ServerUnderTest, server_under_test
from mcpipechekr.tasks import Task, TaskFile, load_tasks, refuse_untouched_example, select_tasks

NO_BASELINE = (
    "no baseline yet ({path}): the loop compares answers with it. Run `doit baseline` "
    "(or `mcpipechekr baseline`) to create it, then run the loop again."
)


def read_baseline(config: Config) -> Baseline | None:
    """runs/baseline.json, or None when there is none yet."""
    path = baseline_path(config.paths.runs)
    return read_model(path, Baseline) if path.exists() else None


def require_baseline(config: Config) -> Baseline:
    """The baseline, or a UserError telling the human to run `doit baseline`."""
    baseline = read_baseline(config)
    if baseline is None:
        raise UserError(NO_BASELINE.format(path=baseline_path(config.paths.runs)))
    return baseline


# --- getting a result ---------------------------------------------------------------------------


@dataclass
class TaskResult:
    """A task's result before it is judged."""

    task: Task
    result: Any
    method: str
    calls: list[ToolCall] = field(default_factory=list)
    error: str | None = None
    alternative: list[ToolCall] | None = None
    """Another call sequence with the same answer (the phase-0 agent's, see `probe_minimum`)."""

    @property
    def fewest_calls(self) -> int:
        """The entry's `calls`: the fewer of the result's calls and the alternative's."""
        if self.alternative is None:
            return len(self.calls)
        return min(len(self.calls), len(self.alternative))

    @property
    def tokens(self) -> int:
        """The entry's `reference_tokens`: the cheaper of the two sequences."""
        if self.alternative is None:
            return sequence_tokens(self.calls)
        return min(sequence_tokens(self.calls), sequence_tokens(self.alternative))


def _call_error(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"


def run_reference_calls(server: ServerUnderTest, task: Task, timeout_s: float) -> TaskResult:
    """Execute a task's reference calls in order; the first failing call stops them."""
    calls: list[ToolCall] = []
    for number, ref in enumerate(task.reference_calls):
        started = time.monotonic()
        try:
            answer = server.call_tool(ref.tool, ref.arguments, timeout_s)
        except UserError:
            raise
        except Exception as exc:  # an error response: the server is still usable, the task is not
            return TaskResult(
                task, None, "reference_calls", calls, f"reference call {number + 1}: {_call_error(exc)}"
            )
        call = tool_call_from_result(
            index=number,
            call_id=f"ref-{number + 1}",
            tool=ref.tool,
            arguments=ref.arguments,
            content=list(answer.content),
            structured_content=answer.structured_content,
            is_error=bool(answer.is_error),
            latency_ms=(time.monotonic() - started) * 1000,
        )
        calls.append(call)
        if call.is_error:
            error = f"reference call {number + 1} ({ref.tool}) failed: {call.error_text}"
            return TaskResult(task, None, "reference_calls", calls, error)
    return TaskResult(task, reference_result(task, calls), "reference_calls", calls)


def _content(call: ToolCall) -> Any:
    if call.structured_content is not None:
        return call.structured_content
    texts = [block.get("text") for block in call.result_content if block.get("type") == "text"]
    return "\n".join(text for text in texts if isinstance(text, str))


def reference_result(task: Task, calls: list[ToolCall]) -> dict[str, Any]:
    """The stored result of reference calls (rule in the module docstring)."""
    if task.task_type == "open_ended":
        return {
            "results": [{"tool": c.tool, "arguments": c.arguments, "content": _content(c)} for c in calls]
        }
    last = calls[-1]
    return {
        **_payload(task, _content(last)),
        "tool": last.tool,
        "arguments": last.arguments,
        "structured_content": _content(last),
    }


def _agent_server(config: Config, journal: Path) -> AgentServer:
    """How the phase-0 agent reaches the server: through the capture proxy when stdio, else directly."""
    server = config.server
    if server.command:
        try:
            from mcpipechekr.capture import proxy_server
        except ImportError:
            return AgentServer(
                name=server.name,
                command=server.resolved_command(),
                args=tuple(server.args),
                env=dict(server.env),
                cwd=server.cwd,
            )
        return proxy_server(server, journal, server.name)
    return AgentServer(name=server.name, url=server.url, headers=dict(server.headers))


def _journal_calls(journal: Path) -> list[ToolCall] | None:
    try:
        from mcpipechekr.capture import journal_tool_calls
    except ImportError:
        return None
    return journal_tool_calls(journal) if journal.exists() else None


def run_agent(config: Config, task: Task, runner: Runner, spec: ProviderSpec, workdir: Path) -> TaskResult:
    """Run a task with the phase-0 agent; its final answer is the result."""
    journal = workdir / f"{task.task_id}.jsonl"
    request = RunRequest(
        task=task,
        prompt=task.prompt,
        provider=spec,
        repetition=1,
        server=_agent_server(config, journal),
        journal=journal,
        workdir=workdir,
        config=config,
        timeout_s=config.timeouts.task_s,
        max_requests=10_000,  # no call budget: the baseline wants the answer, whatever it costs
    )
    output = asyncio.run(runner.run(request))
    calls = _journal_calls(journal)
    if calls is None:
        calls = [step for step in output.steps if isinstance(step, ToolCall)]
    if output.status != "completed" or not output.final_answer:
        reason = output.status_reason or f"the agent ended with status {output.status} and no answer"
        return TaskResult(task, output.final_answer, "agent", calls, reason)
    answer = output.final_answer
    result: dict[str, Any] = {"answer": answer}
    if task.task_type == "deterministic":
        result.update(_payload(task, answer))
    return TaskResult(task, result, "agent", calls)


def _payload(task: Task, obtained: Any) -> dict[str, Any]:
    """The identifying values stored for a task: its expected_result's, else those of what was obtained."""
    if task.expected_result is not None:
        return identifying_payload(task.expected_result, expected=True)
    return identifying_payload(obtained, prompt=task.prompt)


def task_warnings(task: Task, result: Any) -> list[str]:
    """What makes a task's baseline unable to check answers (empty when it can)."""
    if task.task_type != "deterministic" or not isinstance(result, dict) or "values" not in result:
        return []
    if result["values"]:
        return []
    return [f"unchecked: {NOTHING_CHECKABLE}"]


def correctness_warnings(taskfile: TaskFile, baseline: Baseline | None) -> list[str]:
    """Tasks whose answers will not be checked, and why: for `validate`, before anything runs.

    From the task file alone: a deterministic task with neither expected_result nor reference calls
    (the phase-0 agent's free text names nothing to check), or an expected_result that names nothing.
    From the baseline, when there is one: every entry's warnings.
    """
    warnings: list[str] = []
    for task in taskfile.tasks:
        if task.task_type != "deterministic":
            continue
        if task.expected_result is not None:
            if not identifying_payload(task.expected_result, expected=True)["values"]:
                warnings.append(f"task '{task.task_id}': its expected_result names nothing to check")
        elif not task.reference_calls:
            warnings.append(
                f"task '{task.task_id}': no expected_result and no reference_calls: the phase-0 agent's "
                "free-text answer names nothing to check, so answers will be reported unchecked; "
                "add an expected_result"
            )
    known = {task.task_id for task in taskfile.tasks}
    for entry in baseline.tasks if baseline else []:
        if entry.task_id in known:
            warnings.extend(f"task '{entry.task_id}' (baseline): {warning}" for warning in entry.warnings)
    return warnings


def write_call_problems(
    taskfile: TaskFile,
    tasks: Iterable[Task],
    tools: Iterable[mcp_types.Tool],
    read_only: Collection[str] = (),
) -> list[Problem]:
    """Reference calls of `tasks` on a tool that may change state, where the task does not allow writes.

    Why: the baseline replays reference calls with no one watching, on every
    rebuild, against whatever server the config names; a call that deletes or
    sends would do it again each time. Phase 1 agents are not held to this:
    which tools they may call is the experiment. `read_only` (config's
    check.read_only) names unannotated tools the server's author trusts to
    only read; they count as annotated read-only, as in `check`.

    One problem per call, at the call's `tool` line, naming the rule and the
    `allow_writes` field that lifts it. A tool the server does not list is left
    to the call itself (it fails with the server's own error).
    """
    by_name = {tool.name: tool for tool in tools}
    wanted = {task.task_id for task in tasks}
    problems = []
    for index, task in enumerate(taskfile.tasks):
        if task.allow_writes or task.task_id not in wanted:
            continue
        for number, call in enumerate(task.reference_calls):
            tool = by_name.get(call.tool)
            risk = write_risk(tool, trusted=call.tool in read_only) if tool is not None else None
            if risk is None:
                continue
            problems.append(
                taskfile.problem(
                    ("tasks", index, "reference_calls", number, "tool"),
                    f"'{call.tool}' may change state: {risk}. The baseline replays reference calls "
                    "unattended and calls only tools annotated readOnlyHint: true (and not "
                    "destructiveHint: true) or trusted in config.yaml's check.read_only; set "
                    "allow_writes: true on the task to run this call anyway, or annotate the tool "
                    "readOnlyHint: true if it only reads",
                )
            )
    return problems


# --- judging it --------------------------------------------------------------------------------


class Judge(Protocol):
    """Scores how plausible a result is, in [0, 1]; kept apart from whatever produced it."""

    label: str

    def score(self, outcome: TaskResult) -> tuple[float, str]: ...


class RulesJudge:
    """Deterministic plausibility, used when no phase-0 model is configured.

    1.0 for a result that is not an error, not empty, and consistent with the
    task's `expected_result` (its identifying values appear in what the server
    returned, or it is a count or a yes/no those results can give:
    `correctness.fits_derived`); 0.0 for an error; 0.2 for an empty result;
    0.3 when it contradicts `expected_result`.
    """

    label = "rules"

    def score(self, outcome: TaskResult) -> tuple[float, str]:
        if outcome.error is not None or outcome.result is None:
            return 0.0, outcome.error or "no result"
        if _empty(outcome.result):
            return 0.2, "the result is empty"
        task = outcome.task
        if task.expected_result is not None:
            contents = [_content(call) for call in outcome.calls] or [outcome.result]
            seen = orjson.dumps(contents, default=str).decode()
            expected = identifying_payload(task.expected_result, expected=True)
            verdict = check_deterministic(seen, expected)
            if verdict.status == "unchecked":
                return 1.0, "not an error, not empty; the expected_result names nothing to check"
            if not verdict.correct and fits_derived(task.expected_result, contents):
                return (
                    1.0,
                    "not an error, not empty; expected_result is a count or a yes/no the result can give",
                )
            if not verdict.correct:
                return 0.3, "the result does not contain the task's expected_result"
        return 1.0, "not an error, not empty" + (", matches expected_result" if task.expected_result else "")


def _empty(result: Any) -> bool:
    if isinstance(result, dict):
        if "values" in result and "match" in result:
            return (
                not result["values"] and not result.get("answer") and _empty(result.get("structured_content"))
            )
        if "results" in result:
            return all(_empty(item.get("content")) for item in result["results"])
        if "answer" in result:
            return not str(result["answer"]).strip()
        return not result
    if isinstance(result, list | str):
        return not result
    return result is None


class JudgeVerdict(BaseModel):
    """The LLM judge's answer."""

    score: float = Field(ge=0.0, le=1.0, description="How plausible the result is, 0 to 1.")
    reason: str = Field(description="One sentence saying why.")


JUDGE_INSTRUCTIONS = """You check the accepted answers of a test suite for an MCP server. You get a task
(the question a user asked an agent) and the result recorded as its answer (tool output or an agent's
final answer). Judge only whether the result plausibly and completely answers the task: 1.0 certainly
right, 0.5 unsure, 0.0 wrong, empty or an error. Answer with a score and a one-sentence reason."""


class LlmJudge:
    """An LLM scores the result (pydantic-ai, the phase-0 provider); a different prompt from any agent's."""

    def __init__(self, spec: ProviderSpec, config: Config):
        from mcpipechekr.llm import build_model

        self.spec = spec
        self.label = f"llm:{spec}"
        self.model = build_model(spec, config, purpose="the Phase 0 judge")
        self.timeout_s = config.timeouts.task_s

    def score(self, outcome: TaskResult) -> tuple[float, str]:
        from pydantic_ai import Agent, PromptedOutput
        from pydantic_ai.settings import ModelSettings

        if outcome.error is not None:
            return 0.0, outcome.error
        agent = Agent(
            self.model,
            output_type=PromptedOutput(JudgeVerdict),
            instructions=JUDGE_INSTRUCTIONS,
            model_settings=ModelSettings(timeout=self.timeout_s),
            retries=1,
        )
        prompt = (
            f"Task ({outcome.task.task_type}): {outcome.task.prompt}\n\nRecorded result:\n"
            + orjson.dumps(outcome.result, default=str).decode()[:20_000]
        )
        try:
            verdict = asyncio.run(agent.run(prompt)).output
        except Exception as exc:
            raise UserError(f"the phase-0 judge {self.spec} failed: {type(exc).__name__}: {exc}") from exc
        return verdict.score, verdict.reason


def make_judge(spec: ProviderSpec, config: Config) -> Judge:
    """Rules for `demo`, else an LLM judge on the phase-0 provider."""
    return RulesJudge() if spec.is_demo else LlmJudge(spec, config)


# --- the phase ---------------------------------------------------------------------------------


@dataclass
class BaselineOutcome:
    """What `build_baseline` did."""

    baseline: Baseline | None
    path: Path
    baselined: list[str]
    kept: list[str]
    problems: list[str]
    written: bool
    stale: list[str] = field(default_factory=list)
    """Selected tasks whose entry was made against other tool definitions (rebuilt, among `baselined`)."""
    notes: dict[str, str] = field(default_factory=dict)
    """Per rebuilt task, how its minimum was found when it is not the reference calls'."""


def _server_log(config: Config) -> Path:
    return config.paths.home / "logs" / "baseline.stderr.log"


def build_baseline(
    config: Config,
    *,
    task_ids: Sequence[str] = (),
    tags: Sequence[str] = (),
    regenerate: bool = False,
    runner: Runner | None = None,
    judge: Judge | None = None,
    server: ServerUnderTest | None = None,
) -> BaselineOutcome:
    """Baseline the selected tasks that have no entry yet or a stale one (all of them with `regenerate`).

    `runner` runs tasks without reference calls (default: the registry's runner
    for `providers.phase0`); `judge` scores results (default: `make_judge`);
    `server` reuses a started server instead of starting one. The server is
    started whenever there is something to baseline or an entry that could be
    stale: its tools/list tells which entries are. Raises ConfigFileError,
    before any call, when a reference call to run would call a tool not
    annotated read-only in a task without `allow_writes` (`write_call_problems`).
    """
    from mcpipechekr.server.workspace import prepare_repo

    path = baseline_path(config.paths.runs)
    existing = read_baseline(config)
    refuse_untouched_example(config.paths.tasks)
    taskfile = load_tasks(config.paths.tasks)
    selected = select_tasks(taskfile, task_ids, tags)
    missing = [t for t in selected if regenerate or existing is None or existing.entry(t.task_id) is None]
    hashed = [t for t in selected if t not in missing and _entry_hash(existing, t.task_id) is not None]
    if not missing and not hashed:
        return BaselineOutcome(existing, path, [], [t.task_id for t in selected], [], False)
    spec = config.providers.phase0
    prepare_repo(config.server)
    live = server or server_under_test(config, _server_log(config), share=True)
    if server is None:
        live.start()
    try:
        tools = live.list_tools()
        tools_hash = snapshot_tools(config.server.name, tools).tools_hash
        stale = [
            t.task_id
            for t in hashed
            if existing is not None and (entry := existing.entry(t.task_id)) and entry.is_stale(tools_hash)
        ]
        todo = [t for t in selected if t in missing or t.task_id in stale]
        kept = [t.task_id for t in selected if t not in todo]
        if not todo:
            return BaselineOutcome(existing, path, [], kept, [], False)
        refused = write_call_problems(taskfile, todo, tools, config.check.read_only)
        if refused:
            raise ConfigFileError(refused)
        results = _results(config, todo, runner=runner, spec=spec, server=live, own_server=server is None)
    finally:
        if server is None:
            live.stop()
    notes = _probe_stale(config, [r for r in results if r.task.task_id in stale], runner=runner, spec=spec)
    judge = judge or make_judge(spec, config)
    entries: dict[str, BaselineEntry] = {
        entry.task_id: entry for entry in (existing.tasks if existing else [])
    }
    problems = []
    for outcome in results:
        score, reason = judge.score(outcome)
        if outcome.error:
            problems.append(f"{outcome.task.task_id}: {outcome.error}")
        entries[outcome.task.task_id] = BaselineEntry(
            task_id=outcome.task.task_id,
            result=config.redactor.redact(outcome.result),
            plausibility_score=round(score, 4),
            evaluator=judge.label,
            timestamp=utc_now(),
            method=outcome.method,  # type: ignore[arg-type]
            calls=outcome.fewest_calls,
            reference_tokens=outcome.tokens,
            plausibility_reason=reason,
            warnings=task_warnings(outcome.task, outcome.result),
            tools_hash=tools_hash,
        )
    order = [t.task_id for t in taskfile.tasks]
    ordered = [entries.pop(task_id) for task_id in order if task_id in entries] + list(entries.values())
    baseline = Baseline(generated_at=utc_now(), mcp_server_sha=_server_sha(config), tasks=ordered)
    write_model(path, baseline)
    baselined = [o.task.task_id for o in results]
    return BaselineOutcome(baseline, path, baselined, kept, problems, True, stale, notes)


def _entry_hash(baseline: Baseline | None, task_id: str) -> str | None:
    entry = baseline.entry(task_id) if baseline is not None else None
    return entry.tools_hash if entry is not None and entry.method != "manual" else None


def _probe_stale(
    config: Config, results: list[TaskResult], *, runner: Runner | None, spec: ProviderSpec
) -> dict[str, str]:
    """Try the phase-0 agent on rebuilt tasks that have reference calls (see `probe_minimum`)."""
    candidates = [r for r in results if r.method == "reference_calls" and r.error is None]
    if not candidates:
        return {}
    if runner is None:
        from mcpipechekr.runners.registry import get_runner

        runner = get_runner(spec, config)
    notes: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix=own_temp_prefix("baseline")) as scratch:
        for outcome in candidates:
            workdir = Path(scratch) / outcome.task.task_id
            workdir.mkdir()
            agent = run_agent(config, outcome.task, runner, spec, workdir)
            note = probe_minimum(outcome, agent, config.thresholds.open_ended_divergence)
            if note:
                notes[outcome.task.task_id] = note
    return notes


def probe_minimum(outcome: TaskResult, agent: TaskResult, divergence: float) -> str | None:
    """When the agent's answer agrees with the reference result in fewer calls or fewer tokens, keep
    its calls as `outcome`'s alternative (the entry's minimum then takes the fewer calls and the fewer
    tokens of the two); return a line saying so, else None.

    Agrees: a deterministic answer names the result's identifying values; an
    open-ended one diverges from the result by at most `divergence` (the
    threshold Phase 2 judges open-ended answers with).

    Why: the reference calls in tasks.yaml were written for the server as it
    was. After a fix added a parameter, one call may do what three did, and a
    baseline priced on the three would rate that one call above the optimum.
    """
    if agent.error is not None or not agent.calls or not isinstance(agent.result, dict):
        return None
    answer = agent.result.get("answer")
    if not isinstance(answer, str):
        return None
    if outcome.task.task_type == "open_ended":
        agrees = 1.0 - similarity(answer, outcome.result) <= divergence
    else:
        agrees = check_deterministic(answer, outcome.result).correct
    if not agrees:
        return None
    if len(agent.calls) >= len(outcome.calls) and agent.tokens >= outcome.tokens:
        return None
    note = (
        f"the phase-0 agent answered in {len(agent.calls)} call(s) ({agent.tokens:,} tokens) where the "
        f"reference calls take {len(outcome.calls)} ({outcome.tokens:,}): the fewer calls and the "
        "fewer tokens are the new minimum"
    )
    outcome.alternative = agent.calls
    return note


def _server_sha(config: Config) -> str | None:
    from mcpipechekr.server.workspace import repo_state

    try:
        return repo_state(config.server).sha
    except Exception:  # not a git repository: the baseline simply records no commit
        return None


def _results(
    config: Config,
    tasks: list[Task],
    *,
    runner: Runner | None,
    spec: ProviderSpec,
    server: ServerUnderTest,
    own_server: bool,
) -> list[TaskResult]:
    """Reference calls on the started `server`; then (stopped first when `own_server`) the agent's tasks."""
    by_reference = [task for task in tasks if task.reference_calls]
    by_agent = [task for task in tasks if not task.reference_calls]
    results: dict[str, TaskResult] = {}
    for task in by_reference:
        results[task.task_id] = run_reference_calls(server, task, config.timeouts.tool_call_s)
    if own_server:
        server.stop()  # the agent reaches the server through its own process
    if by_agent:
        if runner is None:
            from mcpipechekr.runners.registry import get_runner

            runner = get_runner(spec, config)
        with tempfile.TemporaryDirectory(prefix=own_temp_prefix("baseline")) as scratch:
            for task in by_agent:
                workdir = Path(scratch) / task.task_id
                workdir.mkdir()
                results[task.task_id] = run_agent(config, task, runner, spec, workdir)
    return [results[task.task_id] for task in tasks]
