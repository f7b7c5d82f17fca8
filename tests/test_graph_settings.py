"""The graph's flags: read from doit's command line wherever they appear, recorded as given."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from project import ROOT, doit

from mcpipechekr.graph import Settings, settings_from_argv


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
