"""The graph's flags: read from doit's command line wherever they appear, recorded as given."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import click
import pytest
from project import ROOT, doit

from mcpipechekr.cli.common import provider_options
from mcpipechekr.config import PHASES, PROVIDER_FLAGS
from mcpipechekr.graph.flags import PARAMS, Settings, settings_from_argv
from mcpipechekr.graph.phase1 import _doit_parallel, _selected


def test_flags_are_read_wherever_they_stand() -> None:
    settings = settings_from_argv(
        [
            "trace",
            "--task",
            "a",
            "evaluate",
            "--task=b",
            "--phase1-provider",
            "openai/gpt-4o",
            "--repeat",
            "3",
            "--new-run",
            "--runner=opencode",
            "--keep-builtin-tools",
            "--unknown",
            "x",
        ]
    )
    assert settings.task_ids == ("a", "b")
    assert settings.providers == (("phase1", "openai/gpt-4o"),)
    assert settings.repeat == 3 and settings.new_run and settings.keep_builtin_tools
    assert settings.runner == "opencode"
    assert settings.given() == {
        "task_ids": ["a", "b"],
        "repeat": 3,
        "runner": "opencode",
        "keep_builtin_tools": True,
        "new_run": True,
        "phase1_provider": "openai/gpt-4o",
    }


def test_no_flags_means_the_defaults_and_nothing_recorded() -> None:
    assert settings_from_argv(["loop"]) == Settings()
    assert Settings().given() == {}


def test_a_flag_without_its_value_at_the_end_is_left_to_doit() -> None:
    assert settings_from_argv(["loop", "--task"]).task_ids == ()


def test_a_folder_without_config_lists_the_tasks_and_says_what_is_missing(tmp_path: Path) -> None:
    shutil.copy(ROOT / "dodo.py", tmp_path / "dodo.py")
    listed = doit(tmp_path, dict(os.environ), "list")
    assert listed.returncode == 0, listed.stderr
    assert {line.split()[0] for line in listed.stdout.splitlines()} >= {"loop", "baseline", "review", "fix"}
    loop = doit(tmp_path, dict(os.environ), "loop")
    assert loop.returncode != 0
    assert (
        "config.yaml: config file not found" in loop.stdout and "Traceback" not in loop.stdout + loop.stderr
    )


def test_provider_flags_of_both_front_ends_come_from_one_table() -> None:
    """Each phase has a click option and a doit param, spelled and explained alike."""
    probe = provider_options(click.Command("probe"))
    options = {opt.opts[0]: opt for opt in probe.params if isinstance(opt, click.Option)}
    params = {param["long"]: param for param in PARAMS}
    assert [flag.phase for flag in PROVIDER_FLAGS] == list(PHASES)
    assert set(options) == {flag.flag for flag in PROVIDER_FLAGS}
    for flag in PROVIDER_FLAGS:
        option, param = options[flag.flag], params[flag.name]
        assert (option.name, param["name"]) == (flag.dest, flag.dest)
        assert option.help == param["help"] == flag.help
    settings = settings_from_argv([arg for flag in PROVIDER_FLAGS for arg in (flag.flag, "demo")])
    assert settings.providers == tuple(sorted((phase, "demo") for phase in PHASES))


def test_every_command_takes_its_provider_flags_from_the_table() -> None:
    from mcpipechekr.cli import main

    by_flag = {flag.flag: flag for flag in PROVIDER_FLAGS}
    seen = set()
    ctx = click.Context(main)
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        assert command is not None
        for option in command.params:
            flag = by_flag.get(option.opts[0])
            if flag is not None and isinstance(option, click.Option):
                seen.add(flag.phase)
                assert option.name == flag.dest, name
                assert option.help is not None and option.help.startswith(flag.help), name
    assert seen == set(PHASES)


@pytest.mark.parametrize(
    ("argv", "selected", "parallel"),
    [
        (["evaluate"], ["evaluate"], False),
        (["run", "-n", "2", "trace:a", "--task", "x"], ["trace:a"], True),
        (["-f", "dodo.py", "trace:b", "trace:c", "--concurrency", "3"], ["trace:b", "trace:c"], False),
        (["--process=3", "review"], ["review"], True),
        (["-n1", "loop"], ["loop"], False),
    ],
)
def test_what_a_doit_command_line_selects_and_whether_doit_runs_in_parallel(
    argv: list[str], selected: list[str], parallel: bool
) -> None:
    """What `_phase1` builds ahead: the named trace targets alone, else the planned run's; none when doit
    was given workers of its own."""
    assert _selected(argv) == selected
    assert _doit_parallel(argv) is parallel
