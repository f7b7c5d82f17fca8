"""`tasks propose`: explore the server read-only, propose tasks, keep the ones whose answer replays.

The steps: start the server and explore it (`explore.py`: argument synthesis
as `check` does it, read-only tools only, then records fed back into the
tools, results read as records whether JSON or text); propose tasks from what
was found (`shapes.py`: lookups, counts, filters, extremes, comparisons,
chains, a few negative cases), ordered so the first ones are varied
(`templates.interleave`), those about `--about` first; with a model (`--model`,
or `providers.phase0` when it names one), the model rewords them and may add
its own (`model.py`); replay each proposal's reference calls twice
(`verify.py`) on a second, fresh server until `count` tasks are verified; give
them ids and a split. At most one task in five is a negative case (an answer of
zero, on purpose), and none has an empty answer by accident. About one task in
four is `split: holdout` (`assign_splits`), spread over the tools the tasks rely
on. Writing the file is `write.py`'s, so a caller can show the tasks first.

The fresh server is started at the beginning, beside the exploring one
(`ServerUnderTest.start_soon`), so a server that takes 20 s to start costs 20 s,
not 40; it is stopped on every way out, Ctrl-C and errors included. Only an
HTTP server with a `start` command is started after exploration, as before:
two copies of it could not listen on one port.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpipechekr.config import Config
from mcpipechekr.errors import UserError
from mcpipechekr.propose.explore import Exploration, environment_dump, explore
from mcpipechekr.propose.model import model_proposals
from mcpipechekr.propose.shapes import offline_proposals
from mcpipechekr.propose.templates import Proposal, interleave, slugify
from mcpipechekr.propose.verify import Refusal, verify_proposal
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.server.lifecycle import ServerUnderTest, server_under_test
from mcpipechekr.server.logs import log_path_in
from mcpipechekr.tasks import ReferenceCall, Task

HOLDOUT_EVERY = 4
"""One task in this many is held out."""
NEGATIVE_EVERY = 5
"""At most one task in this many is a negative case (an answer of zero, on purpose)."""
DEFAULT_COUNT = 10
SECRET_REFUSAL = "it holds a secret of the configuration (an API key, a token): secrets are never written"


@dataclass
class ProposeOutcome:
    """The verified tasks, in the order to write them, and the proposals refused with their reasons."""

    tasks: list[Task]
    refused: list[Refusal] = field(default_factory=list)
    observations: int = 0
    """Successful read-only calls exploration made."""
    callable_tools: int = 0
    """Tools exploration could call (annotated read-only)."""
    proposed: int = 0
    """Proposals made before verification."""
    content_tools: int = 0
    """Tools whose results held records to ask about (not prose, not an error, not the server process's
    environment: its values are the machine's, not the server's content)."""

    def why_none(self) -> str:
        """Why no task was written, in one sentence a user can act on."""
        if self.callable_tools == 0:
            return (
                "the server annotates no tool readOnlyHint: true (and not destructiveHint: true), "
                "so none was called"
            )
        if self.observations == 0:
            return "no read-only tool answered the calls exploration could make"
        if self.proposed == 0:
            return "the results held no records to ask about (prose, or nothing)"
        clock = sum(1 for r in self.refused if "depends on the clock" in r.reason)
        if clock and clock >= len(self.refused) // 2:
            return "the answers the server gives depend on the clock (times, dates of today)"
        return "every proposal was refused (listed above)"


def propose_tasks(
    config: Config,
    *,
    count: int = DEFAULT_COUNT,
    spec: ProviderSpec | None = None,
    model: Any = None,
    taken_ids: Iterable[str] = (),
    taken_prompts: Iterable[str] = (),
    log_path: Path | None = None,
    progress: Callable[[str], None] | None = None,
    about: str | None = None,
    tools: Iterable[str] = (),
) -> ProposeOutcome:
    """Propose up to `count` verified tasks for the configured server.

    `spec` names a model (None or `demo`: the offline templates); `model` is a
    pydantic-ai model to use instead of building one from `spec` (tests pass a
    scripted one). `taken_ids` are ids the tasks must not reuse and
    `taken_prompts` questions already asked (the file's, when appending).
    `about` steers the tasks to a subject (its words are searched for and the
    tasks mentioning them come first); `tools` keeps only tasks whose answer
    comes from one of these tools (a UserError names the tools when one is unknown).
    """
    from mcpipechekr.server.workspace import prepare_repo

    say = progress or (lambda _text: None)
    timeout_s = config.check.call_timeout_s
    prepare_repo(config.server)
    fresh = server_under_test(config, _verification_log(config, log_path))
    overlap = config.server.start is None  # two copies of a `start` command would share one port
    try:
        if overlap:
            fresh.start_soon()
        say(f"exploring {config.server.name} with read-only calls")
        with server_under_test(config, log_path) as server:
            found = explore(config, server, timeout_s, about=about)
        wanted = _wanted_tools(found, tools)
        proposals = _proposals(config, found, count, spec, model, say, about)
        proposals = [p for p in proposals if not wanted or p.expected_tool in wanted]
        kept, refused = _screened(config, proposals, taken_prompts)
        say(f"verifying on a fresh server: {len(kept)} proposal(s)")
        if overlap:
            fresh.wait_started()
        else:
            fresh.start()
        verified = _verified(fresh, kept, count, timeout_s, config, refused)
    finally:
        fresh.stop()
    tasks = _as_tasks(verified, set(taken_ids))
    content = {
        obs.tool
        for obs in found.observations
        if not obs.reading.empty and not obs.placeholders and not environment_dump(obs.reading.single)
    }
    return ProposeOutcome(
        assign_splits(tasks),
        refused,
        len(found.observations),
        len(found.callable),
        len(proposals),
        len(content),
    )


def _wanted_tools(found: Exploration, tools: Iterable[str]) -> set[str]:
    wanted = {name.strip() for name in tools if name.strip()}
    unknown = sorted(wanted - {tool.name for tool in found.tools})
    if unknown:
        names = ", ".join(sorted(tool.name for tool in found.tools))
        raise UserError(f"--tools: the server has no tool {', '.join(map(repr, unknown))} (tools: {names})")
    not_read_only = sorted(wanted - set(found.callable))
    if not_read_only and not_read_only == sorted(wanted):
        raise UserError(
            f"--tools: {', '.join(map(repr, not_read_only))} may change state (not annotated "
            "readOnlyHint: true, nor trusted in check.read_only), and propose calls only read-only tools"
        )
    return wanted


def _verification_log(config: Config, log_path: Path | None) -> Path:
    """The fresh server's own stderr log beside the exploring one's: both run at once."""
    if log_path is None:
        return log_path_in(config.paths.home / "logs", f"{config.server.name}-verify")
    return log_path.with_name(log_path.name.removesuffix(".stderr.log") + "-verify.stderr.log")


def _proposals(
    config: Config,
    found: Exploration,
    count: int,
    spec: ProviderSpec | None,
    model: Any,
    say: Callable[[str], None],
    about: str | None = None,
) -> list[Proposal]:
    """What to propose from the exploration: the templates' questions, reworded by the model and joined
    by its own tasks when one is given (`--model`, else `providers.phase0` when it names one)."""
    offline = interleave(offline_proposals(found), about)
    chosen = spec if spec is not None else config.providers.phase0
    if model is None and chosen.is_demo:
        return offline
    label = "the model" if chosen.is_demo else str(chosen)
    if model is None:
        from mcpipechekr.llm import build_model

        model = build_model(chosen, config, purpose="proposing tasks")
    say(f"asking {label} for {count} tasks")
    return model_proposals(
        model, label, found, count, config.timeouts.task_s, config.redactor, offline, about=about
    )


def _screened(
    config: Config, proposals: list[Proposal], taken_prompts: Iterable[str]
) -> tuple[list[Proposal], list[Refusal]]:
    """The proposals worth verifying: none asked before, none holding a secret (those are refused)."""
    redact = config.redactor.redact
    asked = {prompt.strip().lower() for prompt in taken_prompts}
    refused: list[Refusal] = []
    kept: list[Proposal] = []
    for proposal in proposals:
        if proposal.prompt.strip().lower() in asked:
            continue
        if proposal.template != "negative" and _empty(proposal.expected_result):
            continue  # an empty answer only on purpose, as a negative case
        content = [proposal.prompt, proposal.expected_result, proposal.reference_calls, proposal.tags]
        if redact(content) != content:
            refused.append(Refusal(redact(proposal.prompt), SECRET_REFUSAL, proposal.template))
        else:
            kept.append(proposal)
    return kept, refused


def _empty(value: Any) -> bool:
    """0, an empty string, list or mapping (False is an answer: "no")."""
    return not isinstance(value, bool) and value in (0, [], "", {})


def _verified(
    fresh: ServerUnderTest,
    kept: list[Proposal],
    count: int,
    timeout_s: float,
    config: Config,
    refused: list[Refusal],
) -> list[Proposal]:
    """The proposals whose reference calls replay on the fresh server, up to `count`; the rest refused."""
    redact = config.redactor.redact
    verified: list[Proposal] = []
    tools = {tool.name: tool for tool in fresh.list_tools(timeout_s=timeout_s)}
    negatives = 0
    for proposal in kept:
        if len(verified) >= count:
            break
        negative = proposal.template == "negative"
        if negative and negatives + 1 > count // NEGATIVE_EVERY:
            continue  # at most one in five: a negative case asks only whether the agent says "none"
        reason = verify_proposal(fresh, tools, proposal, timeout_s, read_only=config.check.read_only)
        negatives += negative and reason is None
        if reason is None:
            verified.append(proposal)
        else:
            refused.append(Refusal(redact(proposal.prompt), redact(reason), proposal.template))
    return verified


def _as_tasks(proposals: list[Proposal], taken: set[str]) -> list[Task]:
    tasks = []
    for proposal in proposals:
        base = slugify(proposal.slug_hint)
        task_id, number = base, 2
        while task_id in taken:
            task_id, number = f"{base}-{number}", number + 1
        taken.add(task_id)
        tags = list(dict.fromkeys(slugify(tag, 4) for tag in ["proposed", *proposal.tags]))
        tasks.append(
            Task(
                task_id=task_id,
                prompt=proposal.prompt,
                task_type="deterministic",
                expected_tool=proposal.expected_tool or None,
                expected_result=proposal.expected_result,
                min_calls=proposal.min_calls,
                reference_calls=[
                    ReferenceCall(tool=tool, arguments=args) for tool, args in proposal.reference_calls
                ],
                tags=tags,
            )
        )
    return tasks


def assign_splits(tasks: list[Task]) -> list[Task]:
    """About one task in four `holdout`, stratified by tool; the tasks keep their order.

    Tasks are grouped by the tool they rely on (`expected_tool`), the groups
    laid end to end in name order, and every fourth of that sequence, starting
    with the third, is held out: each tool with four tasks or more gives one in
    four, and a small list still gets one.
    """
    by_tool = sorted(range(len(tasks)), key=lambda i: (tasks[i].expected_tool or "", i))
    holdout = {index for position, index in enumerate(by_tool) if position % HOLDOUT_EVERY == 2}
    return [
        task.model_copy(update={"split": "holdout" if i in holdout else "train"})
        for i, task in enumerate(tasks)
    ]
