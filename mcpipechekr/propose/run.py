"""`tasks propose`: explore the server read-only, propose tasks, keep the ones whose answer replays.

The steps: start the server and explore it (`explore.py`: argument synthesis
as `check` does it, read-only tools only, then records fed back into the
tools); propose tasks from what was found, with templates (offline, the
default) or a model (`model.py`); replay each proposal's reference calls
(`verify.py`) on a second, fresh server until `count` tasks are verified; give
them ids and a split. About one task in four is `split: holdout`
(`assign_splits`), spread over the tools the tasks rely on. Writing the file is
`write.py`'s, so a caller can show the tasks first.

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
from mcpipechekr.propose.explore import Exploration, explore
from mcpipechekr.propose.model import model_proposals
from mcpipechekr.propose.templates import Proposal, offline_proposals, slugify
from mcpipechekr.propose.verify import Refusal, verify_proposal
from mcpipechekr.providers import ProviderSpec
from mcpipechekr.server.lifecycle import ServerUnderTest, log_path_in, server_under_test
from mcpipechekr.tasks import ReferenceCall, Task

HOLDOUT_EVERY = 4
"""One task in this many is held out."""
DEFAULT_COUNT = 10
SECRET_REFUSAL = "it holds a secret of the configuration (an API key, a token): secrets are never written"


@dataclass
class ProposeOutcome:
    """The verified tasks, in the order to write them, and the proposals refused with their reasons."""

    tasks: list[Task]
    refused: list[Refusal] = field(default_factory=list)
    observations: int = 0
    """Successful read-only calls exploration made."""


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
) -> ProposeOutcome:
    """Propose up to `count` verified tasks for the configured server.

    `spec` names a model (None or `demo`: the offline templates); `model` is a
    pydantic-ai model to use instead of building one from `spec` (tests pass a
    scripted one). `taken_ids` are ids the tasks must not reuse and
    `taken_prompts` questions already asked (the file's, when appending).
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
            found = explore(config, server, timeout_s)
        proposals = _proposals(config, found, count, spec, model, say)
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
    return ProposeOutcome(assign_splits(tasks), refused, len(found.observations))


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
) -> list[Proposal]:
    """What to propose from the exploration: templates offline, or the model's tasks."""
    use_model = model is not None or (spec is not None and not spec.is_demo)
    if not use_model:
        return offline_proposals(found)
    if model is None:
        from mcpipechekr.llm import build_model

        assert spec is not None
        model = build_model(spec, config, purpose="proposing tasks")
    label = str(spec) if spec is not None else "the model"
    say(f"asking {label} for {count} tasks")
    return model_proposals(model, label, found, count, config.timeouts.task_s, config.redactor)


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
        content = [proposal.prompt, proposal.expected_result, proposal.reference_calls, proposal.tags]
        if redact(content) != content:
            refused.append(Refusal(redact(proposal.prompt), SECRET_REFUSAL, proposal.template))
        else:
            kept.append(proposal)
    return kept, refused


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
    for proposal in kept:
        if len(verified) >= count:
            break
        reason = verify_proposal(fresh, tools, proposal, timeout_s)
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
