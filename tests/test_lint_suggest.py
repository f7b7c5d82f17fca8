"""`mcpipechekr lint --suggest`: description rewrites from the evidence of a real run.

The server is the support desk (tests/servers/helpdesk_server.py), whose
descriptions mislead: a question about a customer's complaint goes to
`search_accounts` ("Search customers and their accounts") before `ticket_log`
("Entries of the support log for a person.") (a late tool), one about what a
customer wrote goes to `search_accounts` and never reaches `list_messages` (a
wrong tool), and `list_messages`'s `order` parameter has no description, so
the latest message takes a walk through every page (an unused parameter). Its
scripted agent (copied beside it as demo_agent.py) also repeats a call (the
agent's habit) and meets a KeyError in `order_status` (a defect of the code).
One real Phase 1 and evaluation (`mcpipechekr run`, `mcpipechekr evaluate`)
make the run once for the module; each test works on a copy of the project.
The phase-0.5 model, where one is configured, is a scripted OpenAI-compatible
endpoint on 127.0.0.1 (tests/fakes/openai_server.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import git
import jsonschema
import pytest
import yaml
from click.testing import CliRunner
from fakes.openai_server import FakeOpenAI, Reply, last_user_text, text_reply
from project import mcpipechekr
from trace_builder import call, make_trace

from mcpipechekr.artifacts import BugReport, RunDir, ToolsSnapshot, list_runs, read_model
from mcpipechekr.artifacts.description_suggestions import (
    DescriptionSuggestion,
    DescriptionSuggestions,
    TextEdit,
)
from mcpipechekr.artifacts.fix_record import read_fix_record
from mcpipechekr.artifacts.schemas import schema_for
from mcpipechekr.artifacts.trace import write_trace
from mcpipechekr.cli import main
from mcpipechekr.config import load_config
from mcpipechekr.findings.home import HOME_ENV
from mcpipechekr.fix import run_fix_loop
from mcpipechekr.fix.evidence import suggestions_for
from mcpipechekr.lint.selection import LexicalSelector, selection_queries
from mcpipechekr.lint.suggest.orchestrate import shared_texts
from mcpipechekr.lint.suggest.rescore import apply_edits
from mcpipechekr.lint.suggest.rewrite import request_phrase
from mcpipechekr.review.decision import record_decision
from mcpipechekr.tasks import load_tasks

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_lint_suggest")]

SERVERS = Path(__file__).parent / "servers"
LATE = "DSC-late-tool-search-accounts"
WRONG = "DSC-wrong-tool-search-accounts"
WALK = "GAP-paging-to-find-list-messages"
REPEATS = "EFF-repeated-calls-search-accounts"
TOO_MANY = "EFF-too-many-calls-latest-complaint-ada"
KEYERROR = "BUG-traceback-most-recent-call-last-keyerror-order-status"
COMPLAINT = "What did the customer Ada Brook complain about most recently?"
WROTE = "What did Tom Reyes write to us about?"
TASKS = {
    "tasks": [
        {
            "task_id": "latest-complaint-ada",
            "prompt": COMPLAINT,
            "task_type": "deterministic",
            "expected_tool": "ticket_log",
            "min_calls": 1,
        },
        {
            "task_id": "latest-message-ada",
            "prompt": "Which message did Ada Brook send last? Give its id.",
            "task_type": "deterministic",
            "expected_tool": "list_messages",
            "min_calls": 1,
        },
        {
            "task_id": "plan-of-ada",
            "prompt": "Which plan is Ada Brook on?",
            "task_type": "deterministic",
            "expected_tool": "search_accounts",
            "min_calls": 1,
        },
        {
            "task_id": "status-of-so-9",
            "prompt": "What is the shipping status of order SO-9?",
            "task_type": "deterministic",
            "expected_tool": "order_status",
            "min_calls": 1,
        },
        {
            "task_id": "what-tom-wrote",
            "prompt": WROTE,
            "task_type": "deterministic",
            "expected_tool": "list_messages",
            "min_calls": 1,
        },
    ]
}


def make_project(root: Path, tasks: dict[str, Any] = TASKS) -> Path:
    server = root / "server"
    server.mkdir(parents=True)
    shutil.copy(SERVERS / "helpdesk_server.py", server / "server.py")
    shutil.copy(SERVERS / "helpdesk_demo_agent.py", server / "demo_agent.py")
    repo = git.Repo.init(server)
    repo.index.add(["server.py", "demo_agent.py"])
    repo.index.commit("support desk")
    repo.close()
    config = {
        "server": {
            "name": "helpdesk",
            "command": "python",
            "args": ["server.py"],
            "cwd": "server",
            "repo": "server",
        },
        "providers": {phase: "demo" for phase in ("phase0", "phase05", "phase1", "phase2", "phase3")},
        "paths": {"home": "home"},
    }
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    (root / "tasks.yaml").write_text(yaml.safe_dump(tasks, sort_keys=False))
    return root


@dataclass(frozen=True)
class Desk:
    """A project whose latest run was traced and evaluated, and the environment its commands ran in."""

    root: Path
    env: dict[str, str]

    @property
    def run(self) -> RunDir:
        return list_runs(self.root / "runs")[-1]

    @property
    def config_file(self) -> Path:
        return self.root / "config.yaml"

    def configure(self, **sections: dict[str, Any]) -> None:
        config = yaml.safe_load(self.config_file.read_text())
        for name, values in sections.items():
            config[name] = {**config.get(name, {}), **values}
        self.config_file.write_text(yaml.safe_dump(config))


def traced_and_evaluated(root: Path) -> Desk:
    """`mcpipechekr run` then `mcpipechekr evaluate` in the project, as a user types them."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", HOME_ENV)}
    env.update({"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"})
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    for args in (["run"], ["evaluate"]):
        result = mcpipechekr(root, env, *args)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return Desk(root, env)


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> Desk:
    return traced_and_evaluated(make_project(tmp_path_factory.mktemp("desk") / "project"))


@pytest.fixture
def desk(evaluated: Desk, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Desk:
    root = Path(shutil.copytree(evaluated.root, tmp_path / "project", symlinks=True))
    monkeypatch.chdir(root)
    monkeypatch.delenv(HOME_ENV, raising=False)
    return Desk(root, evaluated.env)


def suggest(desk: Desk, *args: str, code: int = 0) -> str:
    result = CliRunner().invoke(
        main,
        ["lint", "--config", str(desk.config_file), "--suggest", "latest", *args],
        catch_exceptions=False,
    )
    assert result.exit_code == code, result.output
    return result.output


def written(desk: Desk) -> DescriptionSuggestions:
    return read_model(desk.run.description_suggestions, DescriptionSuggestions)


def by_bug(suggestions: DescriptionSuggestions, bug_id: str) -> DescriptionSuggestion:
    found = suggestions.for_bug(bug_id)
    assert found is not None, [item.bug_id for item in suggestions.suggestions]
    return found


# --- the bugs a description caused, and no others ---------------------------------------------------


def test_the_run_has_the_bugs_the_desk_was_built_for(evaluated: Desk) -> None:
    report = read_model(evaluated.run.bug_report, BugReport)
    assert {bug.id for bug in report.bugs} == {LATE, WRONG, WALK, REPEATS, TOO_MANY, KEYERROR}


def test_a_late_tool_gets_the_right_tools_text_with_its_steps_and_moves_up_in_the_lexical_rescore(
    desk: Desk,
) -> None:
    output = suggest(desk)
    run = desk.run
    tools = {tool.name: tool for tool in read_model(run.tools, ToolsSnapshot).tools}
    late = by_bug(written(desk), LATE)
    assert (late.kind, late.bug_type, late.tool, late.parameter, late.origin) == (
        "late_tool",
        "description",
        "ticket_log",
        None,
        "evidence",
    )
    assert late.current == tools["ticket_log"].description == "Entries of the support log for a person."
    assert late.proposed == (
        'Entries of the support log for a person. Use it for requests such as "What did the customer … '
        'complain about most recently?"'
    )
    (pointer,) = late.also
    assert pointer.tool == "search_accounts" and pointer.current == tools["search_accounts"].description
    assert pointer.proposed == (
        f"{tools['search_accounts'].description} For entries of the support log for a person, "
        "use `ticket_log` instead."
    )

    # the steps quoted are the bug's evidence (the detour), then where the right tool came
    bug = next(b for b in read_model(run.bug_report, BugReport).bugs if b.id == LATE)
    (evidence,) = bug.evidence
    assert evidence.steps == [1]
    assert [(q.trace, q.step) for q in late.quotes] == [(evidence.trace, 1), (evidence.trace, 3)]
    detour, right = late.quotes
    assert detour.call == 'search_accounts({"text": "Ada Brook"})'
    assert (
        detour.agent_said
        == "This is about a customer; search_accounts searches customers and their accounts."
    )
    assert "a request `ticket_log` answers" in detour.why
    assert right.call == 'ticket_log({"person": "Ada Brook"})'
    assert right.why == "`ticket_log`, the task's right tool, reached only after 1 other call(s)"

    # the lexical re-score: the right tool from nowhere to first, and the misled tool no longer wrong
    (lexical,) = late.rescores
    assert (lexical.selector, lexical.queries, lexical.verdict) == ("lexical-bm25", 5, "better")
    assert (lexical.right_before, lexical.right_after) == (3, 4)
    own = lexical.changes[0]
    assert (own.source, own.expected_tool, own.rank_before, own.rank_after) == (
        "task:latest-complaint-ada",
        "ticket_log",
        None,
        1,
    )
    assert (own.picked_before, own.picked_after) == ("search_accounts", "ticket_log")
    figures = {figure.tool: figure for figure in lexical.tools}
    assert (figures["ticket_log"].precision_before, figures["ticket_log"].precision_after) == (None, 1.0)
    assert (figures["search_accounts"].precision_before, figures["search_accounts"].precision_after) == (
        0.5,
        1.0,
    )

    # the claim holds when checked on its own: the selector picks search_accounts now, ticket_log after
    queries = selection_queries(load_tasks(desk.root / "tasks.yaml"))
    query = next(q for q in queries if q.source == "task:latest-complaint-ada")
    main_edit = TextEdit(
        tool=late.tool, parameter=late.parameter, current=late.current, proposed=late.proposed
    )
    rewritten = apply_edits(list(tools.values()), [main_edit, *late.also])
    assert LexicalSelector().select([query], list(tools.values()), 1)[0][0].tool == "search_accounts"
    assert LexicalSelector().select([query], rewritten, 1)[0][0].tool == "ticket_log"

    assert f"{LATE}: `ticket_log` was called only after `search_accounts`" in output
    assert (
        "    task:latest-complaint-ada: ticket_log unranked → 1st (picked search_accounts → ticket_log)"
        in output
    )
    assert "    ticket_log: precision – → 1.00, recall 0.00 → 1.00" in output


def test_a_wrong_tool_gets_the_right_tools_text_and_a_pointer_that_would_mislead_is_left_out(
    desk: Desk,
) -> None:
    output = suggest(desk)
    run = desk.run
    tools = {tool.name: tool for tool in read_model(run.tools, ToolsSnapshot).tools}
    wrong = by_bug(written(desk), WRONG)
    assert (wrong.kind, wrong.bug_type, wrong.tool, wrong.parameter, wrong.origin) == (
        "wrong_tool",
        "description",
        "list_messages",
        None,
        "evidence",
    )
    assert wrong.current == tools["list_messages"].description == "A customer's messages, three a page."
    assert wrong.proposed == (
        'A customer\'s messages, three a page. Use it for requests such as "What did … write to us about?"'
    )

    # the agent never reached list_messages: the one step quoted is the call it made instead
    bug = next(b for b in read_model(run.bug_report, BugReport).bugs if b.id == WRONG)
    (evidence,) = bug.evidence
    (quote,) = wrong.quotes
    assert (quote.trace, quote.step, quote.task_id) == (evidence.trace, 1, "what-tom-wrote")
    assert quote.call == 'search_accounts({"text": "Tom Reyes"})'
    assert quote.agent_said == "A question about a customer: search_accounts holds the customers."

    # the pointer puts "messages" in a second description: the word counts for less, and the
    # latest-message query ("… Give its id.") falls to order_status by its "id"
    (lexical,) = wrong.rescores
    assert (lexical.verdict, lexical.right_before, lexical.right_after) == ("better", 3, 4)
    own = lexical.changes[0]
    assert (own.source, own.rank_before, own.rank_after, own.picked_before, own.picked_after) == (
        "task:what-tom-wrote",
        None,
        1,
        None,
        "list_messages",
    )
    assert wrong.also == []
    assert wrong.notes == [
        "the pointer added to `search_accounts` made the selection test worse (lexical-bm25), so it is "
        "left out"
    ]
    queries = selection_queries(load_tasks(desk.root / "tasks.yaml"))
    main_edit = wrong.edits()[0]
    pointer = TextEdit(
        tool="search_accounts",
        current=tools["search_accounts"].description,
        proposed=f"{tools['search_accounts'].description} For a customer's messages, three a page, use "
        "`list_messages` instead.",
    )
    alone = LexicalSelector().select(queries, apply_edits(list(tools.values()), [main_edit]), 1)
    pointed = LexicalSelector().select(queries, apply_edits(list(tools.values()), [main_edit, pointer]), 1)
    moved = {
        query.source: (a[0].tool, b[0].tool)
        for query, a, b in zip(queries, alone, pointed, strict=True)
        if a[0].tool != b[0].tool
    }
    assert moved == {"task:latest-message-ada": ("list_messages", "order_status")}

    assert f"{WRONG}: `list_messages` was never called\n" in output
    assert "    task:what-tom-wrote: list_messages unranked → 1st (picked none → list_messages)" in output


def test_an_unused_ordering_parameter_gets_a_description_that_ranks_it_first(desk: Desk) -> None:
    suggest(desk)
    walk = by_bug(written(desk), WALK)
    assert (walk.kind, walk.bug_type, walk.tool, walk.parameter, walk.current) == (
        "unused_parameter",
        "feature_gap",
        "list_messages",
        "order",
        None,
    )
    assert walk.proposed == (
        "The order of the results: `asc` lists the earliest first, `desc` lists the latest first. Set it to "
        "`desc` to get the latest match on the first page, in one call, instead of paging."
    )
    assert walk.also == []
    assert [quote.step for quote in walk.quotes] == [1, 3, 5]
    assert walk.quotes[-1].why == (
        "`page`=3: what the answer used was only here; `order`=desc would have put it on the first page"
    )
    (lexical,) = walk.rescores
    assert lexical.verdict == "better" and lexical.right_before == lexical.right_after == 3
    (place,) = lexical.parameter
    assert (place.source, place.parameters, place.rank_before, place.rank_after) == (
        "task:latest-message-ada",
        3,
        None,
        1,
    )


def test_no_suggestion_for_how_the_agent_behaved_or_a_defect_of_the_code(desk: Desk) -> None:
    output = suggest(desk)
    suggestions = written(desk)
    assert [item.bug_id for item in suggestions.suggestions] == [WALK, LATE, WRONG]
    reasons = {skip.bug_id: skip.reason for skip in suggestions.skipped}
    agent = "how the agent behaved (fixable by the agent, not the server): no description change removes it"
    assert reasons == {
        REPEATS: agent,
        TOO_MANY: agent,
        KEYERROR: "a defect of the server's code: no description change fixes it",
    }
    assert output.startswith(
        f"{desk.run.run_id}: 3 description suggestion(s), 3 bug(s) without (lexical-bm25) → "
        f"runs/{desk.run.run_id}/description_suggestions.json\n"
    )
    assert f"No suggestion:\n  {REPEATS}: {agent}\n" in output


def test_a_value_the_agent_had_to_guess_gets_a_parameter_text_naming_what_worked(desk: Desk) -> None:
    """An attempt that asked for `order: "newest"`, was refused, and got its answer with `desc`: the
    error is a (low) bug of the server, and the parameter's text is what to change."""
    refused = "Input validation error: 'newest' is not one of ['asc', 'desc']"
    steps = [
        call("list_messages", {"customer": "Ada Brook", "order": "newest"}, error=refused),
        call(
            "list_messages",
            {"customer": "Ada Brook", "order": "desc"},
            {"messages": [{"id": "M-07"}], "more": True},
        ),
    ]
    trace = make_trace("latest-message-ada", steps, answer="M-07", repetition=9)
    write_trace(desk.run, trace)
    evaluated = CliRunner().invoke(
        main, ["evaluate", "--config", str(desk.config_file), desk.run.run_id], catch_exceptions=False
    )
    assert evaluated.exit_code == 0, evaluated.output
    bug = next(
        b
        for b in read_model(desk.run.bug_report, BugReport).bugs
        if b.tool == "list_messages" and b.type == "bug"
    )
    assert bug.id.startswith("BUG-") and bug.severity == "low" and bug.details["corrected_input"] is True
    suggest(desk)
    found = by_bug(written(desk), bug.id)
    assert (found.kind, found.tool, found.parameter) == ("parameter_values", "list_messages", "order")
    assert "desc" in found.proposed
    assert [quote.step for quote in found.quotes] == [0, 1]


def test_the_file_validates_against_its_schema_and_json_prints_it(desk: Desk) -> None:
    printed = json.loads(suggest(desk, "--format", "json"))
    on_disk = json.loads(desk.run.description_suggestions.read_text())
    jsonschema.validate(on_disk, schema_for(DescriptionSuggestions))
    assert printed == on_disk
    assert on_disk["bug_report_hash"].startswith("sha256:") and on_disk["selectors"] == ["lexical-bm25"]


def test_two_suggestions_that_rewrite_one_text_each_say_so(desk: Desk) -> None:
    suggest(desk)
    suggestions = written(desk)
    late, wrong, walk = by_bug(suggestions, LATE), by_bug(suggestions, WRONG), by_bug(suggestions, WALK)
    assert [item.notes for item in shared_texts([late, walk])] == [late.notes, walk.notes]
    # had the wrong tool's pointer been kept, search_accounts' text would be rewritten by both bugs
    pointer = TextEdit(tool="search_accounts", current=late.also[0].current, proposed="Search customers.")
    noted = shared_texts([late, wrong.model_copy(update={"also": [pointer]}), walk])
    assert noted[0].notes == [
        f"the text of `search_accounts` is also rewritten for {WRONG}: apply the rewrites together (each "
        "re-score counts its own rewrite alone)"
    ]
    assert noted[1].notes == [*wrong.notes, noted[0].notes[0].replace(WRONG, LATE)]
    assert noted[2] == walk


CALM_TASKS = {
    "tasks": [task for task in TASKS["tasks"] if task["task_id"] in ("plan-of-ada", "status-of-so-9")]
}


def test_a_run_whose_bugs_no_description_caused_says_so_and_exits_0(tmp_path: Path) -> None:
    calm = traced_and_evaluated(make_project(tmp_path / "calm", CALM_TASKS))
    report = read_model(calm.run.bug_report, BugReport)
    assert {bug.id for bug in report.bugs} == {REPEATS, KEYERROR}

    output = suggest(calm)

    assert output.splitlines()[:2] == [
        f"{calm.run.run_id}: 0 description suggestion(s), 2 bug(s) without (lexical-bm25) → "
        f"{calm.run.description_suggestions}",
        "No bug of this run was caused by a tool or parameter description (a wrong or late tool, an "
        "unused parameter, a parameter's values guessed): there is no description to rewrite.",
    ]
    assert written(calm).suggestions == [] and len(written(calm).skipped) == 2


# --- the fix agent gets the suggestion of the bug it works on ----------------------------------------

AGENT = 'print("nothing to change <promise>" + "COMPLETE</promise>")\n'


def test_the_fix_prompt_carries_the_bugs_suggestion(desk: Desk) -> None:
    suggest(desk)
    agent = desk.root / "agent.py"
    agent.write_text(AGENT)
    desk.configure(fix={"agent": "shell", "command": f"{{python}} {agent}", "max_iterations": 1})
    record_decision(desk.run, "approve")

    record = run_fix_loop(load_config(desk.config_file, environ={}), desk.run)

    prompts = {
        entry.bug_id: (desk.run.root / entry.prompt).read_text()
        for entry in read_fix_record(desk.run.fix_record).bugs
        if entry.prompt
    }
    assert set(prompts) == {LATE, WRONG, WALK, KEYERROR} and {b.status for b in record.bugs} == {"unresolved"}
    late = by_bug(written(desk), LATE)
    section = prompts[LATE].split("## A description rewrite proposed for this defect", 1)[1]
    for line in (
        "- tool `ticket_log`",
        f"  - now: {late.current}",
        f"  - proposed: {late.proposed}",
        "- tool `search_accounts`",
        f"  - proposed: {late.also[0].proposed}",
        "- lexical-bm25: better; 3 → 4 of 5 queries answered by their right tool "
        "(task:latest-complaint-ada: `ticket_log` picked no → yes)",
    ):
        assert line in section, (line, section)
    assert f"  - proposed: {by_bug(written(desk), WALK).proposed}" in prompts[WALK]
    assert "- parameter `order` of tool `list_messages`" in prompts[WALK]
    assert (
        "- lexical-bm25: better; 3 → 3 of 5 queries answered by their right tool (task:latest-message-ada: "
        "`list_messages` picked yes → yes; task:latest-message-ada: the parameter's place among 3 none → 1)"
    ) in prompts[WALK]
    wrong = prompts[WRONG].split("## A description rewrite proposed for this defect", 1)[1]
    assert f"  - proposed: {by_bug(written(desk), WRONG).proposed}" in wrong
    assert "- note: the pointer added to `search_accounts` made the selection test worse" in wrong
    assert "description rewrite" not in prompts[KEYERROR]


def test_suggestions_of_another_evaluation_are_not_given_to_the_fix_agent(desk: Desk) -> None:
    suggest(desk)
    current = written(desk)
    assert suggestions_for(desk.run, current.bug_report_hash) == current
    assert suggestions_for(desk.run, "sha256:" + "0" * 64) is None


# --- with the phase-0.5 model: its selection test, and its drafts kept only when no worse --------------

GOOD_DRAFT = "Entries of the support log for a person: what the customer complained about, and when."
WROTE_DRAFT = "A customer's messages, three a page: everything the customer wrote to the support desk."
DRAFTS = {  # by the first line of the request, the parameter's first ("… parameter `order` of tool …")
    "parameter `order`": "Sort.",
    "tool `ticket_log`": GOOD_DRAFT,
    "tool `list_messages`": WROTE_DRAFT,
}


def desk_model(body: dict[str, Any]) -> Reply:
    """A model that reads the descriptions: a complaint goes to the tool whose description mentions one,
    what a customer wrote to the one whose description speaks of writing, else `search_accounts`."""
    system = " ".join(m["content"] for m in body["messages"] if m["role"] == "system")
    asked = last_user_text(body)
    if system.startswith("You rewrite one text"):
        first_line = asked.split("\n", 1)[0]
        return text_reply(json.dumps({"text": next(t for k, t in DRAFTS.items() if k in first_line)}))
    blocks = {
        block.split("\n", 1)[0]: block for block in re.split(r"\n(?=## )", system) if block.startswith("## ")
    }
    if "complain" in asked:
        tool = next((name[3:] for name, block in blocks.items() if "complain" in block), "search_accounts")
    elif "write to us" in asked:
        writing = (name[3:] for name, block in blocks.items() if re.search(r"\bwr(ite|ote)\b", block))
        tool = next(writing, "search_accounts")
    elif "message" in asked:
        tool = "list_messages"
    elif "plan" in asked:
        tool = "search_accounts"
    else:
        tool = "order_status"
    return text_reply(json.dumps({"tool": tool, "confidence": "high"}))


def test_a_configured_model_rescores_and_drafts_and_a_worse_draft_is_dropped(desk: Desk) -> None:
    with FakeOpenAI(desk_model) as fake:
        desk.configure(
            providers={"endpoints": {"scripted": {"base_url": fake.base_url}}, "phase05": "scripted/m"},
            timeouts={"task_s": 30},
        )
        output = suggest(desk)
        asked = [last_user_text(body) for body in fake.requests]
    suggestions = written(desk)
    assert suggestions.selectors == ["lexical-bm25", "llm:scripted/m"]
    assert sum(1 for text in asked if text.startswith("Rewrite ")) == 3

    late = by_bug(suggestions, LATE)
    assert (late.origin, late.proposed) == ("model", GOOD_DRAFT)
    lexical, model = late.rescores
    assert (model.selector, model.verdict, model.right_before, model.right_after) == (
        "llm:scripted/m",
        "better",
        3,
        4,
    )
    own = model.changes[0]
    assert (own.source, own.picked_before, own.picked_after, own.rank_before) == (
        "task:latest-complaint-ada",
        "search_accounts",
        "ticket_log",
        None,
    )
    assert (own.right_before, own.right_after) == (0, 1)
    assert lexical.verdict != "worse"
    assert "llm:scripted/m: drafted the text; it scored no worse than the offline one" in late.notes

    # the model's draft for the wrong tool is kept: the model now picks list_messages, and the lexical
    # selector, which no longer finds the request's words in it, scores it the same as the current text
    wrong = by_bug(suggestions, WRONG)
    assert (wrong.origin, wrong.proposed) == ("model", WROTE_DRAFT)
    lexical, model = wrong.rescores
    assert (lexical.verdict, model.verdict) == ("same", "better")
    assert (model.right_before, model.right_after) == (3, 4)
    assert (model.changes[0].source, model.changes[0].picked_after) == (
        "task:what-tom-wrote",
        "list_messages",
    )

    walk = by_bug(suggestions, WALK)
    assert walk.origin == "evidence" and walk.proposed.startswith("The order of the results:")
    assert (
        "llm:scripted/m: its draft scored worse than the offline text and was not kept: Sort." in walk.notes
    )
    assert f"{LATE}: `ticket_log` was called only after `search_accounts` (drafted by the model)" in output
    assert "  re-score, llm:scripted/m: better; right 3/5 → 4/5 queries" in output


# --- refusals and the words a rewrite is built from --------------------------------------------------


def test_a_run_that_was_not_evaluated_is_refused_naming_the_command(desk: Desk) -> None:
    desk.run.bug_report.unlink()
    result = CliRunner().invoke(
        main,
        ["lint", "--config", str(desk.config_file), "--suggest", desk.run.run_id],
        catch_exceptions=False,
    )
    assert result.exit_code == 2
    assert "the run has not been evaluated" in result.output
    assert f"mcpipechekr evaluate {desk.run.run_id}`." in result.output
    refused = CliRunner().invoke(
        main,
        ["lint", "--config", str(desk.config_file), "--suggest", "latest", "--accept-risk", "ticket_log"],
        catch_exceptions=False,
    )
    assert refused.exit_code == 2 and "mcpipechekr lint --accept-risk TOOL` on its own" in refused.output


def test_a_run_that_is_not_there_is_refused_naming_what_to_type(desk: Desk) -> None:
    missing = CliRunner().invoke(
        main, ["lint", "--config", str(desk.config_file), "--suggest", "run-20000101-001"]
    )
    assert missing.exit_code == 2
    assert f"no run `run-20000101-001`. Latest runs: {desk.run.run_id} (or use `latest`)." in missing.output

    shutil.rmtree(desk.root / "runs")
    (desk.root / "runs").mkdir()
    none_yet = CliRunner().invoke(main, ["lint", "--config", str(desk.config_file), "--suggest", "latest"])
    assert none_yet.exit_code == 2
    said = " ".join(none_yet.output.split())
    assert "there are no runs yet, so there is no `latest` run. --suggest reads an evaluated run" in said
    # the commands as they run from here (a bare `mcpipechekr` when it is on PATH)
    assert re.search(
        r"make one with `\S*mcpipechekr run`, then `\S*mcpipechekr evaluate`, then "
        r"`\S*mcpipechekr lint --suggest latest`\.$",
        said,
    ), said


@pytest.mark.parametrize(
    ("prompt", "phrase"),
    [
        (COMPLAINT, "What did the customer … complain about most recently?"),
        ("What is the shipping status of order SO-9?", "What is the shipping status of order …?"),
        ('Find the email titled "Budget 2024" from Ron Chinn.', "Find the email titled … from …."),
        ("Can I see my invoices since 2024-01-01?", "Can I see my invoices since …?"),
    ],
)
def test_a_request_keeps_its_words_and_loses_its_data(prompt: str, phrase: str) -> None:
    assert request_phrase(prompt) == phrase
