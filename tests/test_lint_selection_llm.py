"""The model-backed selection test through a real OpenAI-compatible endpoint on 127.0.0.1."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from fakes.openai_server import FakeOpenAI, Reply, last_user_text, text_reply, tool_call_reply

from mcpipechekr.artifacts import TefReport
from mcpipechekr.cli import main

FIXTURE = Path(__file__).resolve().parent / "servers" / "lint_fixture_server.py"

# query -> (expected tool, the scripted model's answer)
SCRIPT = {
    "Where is my order 1042?": ("get_order", {"tool": "get_order", "confidence": "high"}),
    "What did order 7 cost?": ("get_order", {"tool": None, "confidence": "low"}),
    "Look up the customer called Ada Smith.": (
        "search_customers",
        {"tool": "find_customers", "confidence": "high"},
    ),
    "Search customers in Leeds.": ("search_customers", {"tool": "find_customers", "confidence": "high"}),
    "Which customers live in Paris?": ("find_customers", {"tool": "find_customers", "confidence": "low"}),
}


def answer(body: dict) -> Reply:
    return text_reply(json.dumps(SCRIPT[last_user_text(body)][1]), prompt_tokens=300, completion_tokens=12)


@pytest.fixture
def llm_setup(tmp_path: Path):
    with FakeOpenAI(answer) as fake:
        config = {
            "server": {
                "name": "fixture",
                "command": sys.executable,
                "args": [str(FIXTURE), "--near-duplicates"],
            },
            "providers": {
                "endpoints": {"scripted": {"base_url": fake.base_url}},
                "phase05": "scripted/gpt-test",
            },
            "paths": {"home": str(tmp_path / "home"), "tasks": str(tmp_path / "tasks.yaml")},
        }
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
        queries = list(SCRIPT.items())
        tasks = {
            "tasks": [
                {
                    "task_id": "order",
                    "prompt": queries[0][0],
                    "task_type": "deterministic",
                    "expected_tool": "get_order",
                }
            ],
            "selection_cases": [{"query": q, "expected_tool": expected} for q, (expected, _) in queries[1:]],
        }
        (tmp_path / "tasks.yaml").write_text(yaml.safe_dump(tasks, sort_keys=False))
        yield fake, tmp_path / "config.yaml"


def lint_json(config: Path, *args: str) -> tuple[int, TefReport]:
    result = CliRunner().invoke(
        main, ["lint", "--config", str(config), "--format", "json", *args], catch_exceptions=False
    )
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, TefReport.model_validate_json(result.stdout)


def test_model_choices_give_metrics_and_a_misleading_tool(llm_setup) -> None:
    fake, config = llm_setup
    code, report = lint_json(config)
    assert code == 1
    assert report.selector == "llm:scripted/gpt-test" and report.selection_cases == 5
    assert len(fake.requests) == 5
    request = fake.requests[0]
    assert request["model"] == "gpt-test"
    system = " ".join(m["content"] for m in request["messages"] if m["role"] == "system")
    assert "## find_customers" in system and "- name (required): Part of the customer's name" in system
    assert sorted(last_user_text(r) for r in fake.requests) == sorted(SCRIPT)

    tools = {t.name: t for t in report.tools}
    get_order, search, find = tools["get_order"], tools["search_customers"], tools["find_customers"]
    # get_order: picked once, rightly; the other query got no tool
    assert (get_order.precision, get_order.recall, get_order.f1, get_order.support) == (1.0, 0.5, 0.6667, 2)
    assert (search.precision, search.recall, search.f1, search.support) == (None, 0.0, None, 2)
    # find_customers: picked 3 times, right once; both wrong picks were confident
    assert (find.precision, find.recall, find.f1, find.support) == (0.3333, 1.0, 0.5, 1)
    assert [(c.picked, c.expected, c.count) for c in find.confusions] == [
        ("find_customers", "search_customers", 2)
    ]
    assert search.confusions == find.confusions
    assert (find.misleading, search.misleading, get_order.misleading) == (True, False, False)
    assert report.summary.misleading_tools == 1

    # Nothing changed: the cached report is reused and the model is not asked again.
    code, again = lint_json(config)
    assert code == 1 and len(fake.requests) == 5
    assert again.tools == report.tools
    # A model's low precision stays a warning (the lexical selector's would be a note).
    result = CliRunner().invoke(main, ["lint", "--config", str(config)], catch_exceptions=False)
    assert len(fake.requests) == 5
    warning = "Selection warnings:\n  tool 'find_customers' selection precision 0.33 is below 0.70"
    assert warning in result.output
    assert "lexical selection" not in result.output and "--phase05-provider" not in result.output
    # Accepting the misleading tool unblocks, still without asking the model.
    code, accepted = lint_json(config, "--accept-risk", "find_customers", "--reason", "reviewed")
    assert code == 0 and len(fake.requests) == 5
    assert [(r.tool, r.rule_id, r.reason) for r in accepted.accepted_risks] == [
        ("find_customers", "*", "reviewed")
    ]
    assert not any(t.misleading for t in accepted.tools)


def test_repeat_asks_each_query_n_times_and_counts_every_sample(llm_setup) -> None:
    fake, config = llm_setup
    code, report = lint_json(config, "--repeat", "3")
    assert len(fake.requests) == 15 and report.repeat == 3
    find = next(t for t in report.tools if t.name == "find_customers")
    assert [(c.picked, c.expected, c.count) for c in find.confusions] == [
        ("find_customers", "search_customers", 6)
    ]
    assert find.precision == 0.3333


def test_fake_server_speaks_openai_streaming_tool_calls_and_usage() -> None:
    from openai import OpenAI

    with FakeOpenAI() as fake:
        fake.enqueue(
            tool_call_reply("get_email", {"email_id": 7}),
            text_reply("hello there", prompt_tokens=40),
            Reply(),
        )
        client = OpenAI(base_url=fake.base_url, api_key="test", max_retries=0)
        first = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "read 7"}])
        call = first.choices[0].message.tool_calls[0]
        assert (call.function.name, json.loads(call.function.arguments)) == ("get_email", {"email_id": 7})
        assert first.choices[0].finish_reason == "tool_calls" and first.usage.total_tokens == 15
        stream = client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "hello there"
        assert chunks[-1].usage.prompt_tokens == 40
        assert fake.requests[1]["stream"] is True and last_user_text(fake.requests[1]) == "hi"
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        with pytest.raises(Exception, match="no scripted reply left"):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "y"}])
