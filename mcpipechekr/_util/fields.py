"""Validation pieces shared by the files users edit (config.yaml, tasks.yaml, cases files).

One place for "unknown keys are errors", "must not be blank" and the slug rule,
so every file reports them in the same words.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """Unknown keys are errors: a typo in a hand-edited file must not be silently ignored."""

    model_config = ConfigDict(extra="forbid")


def not_blank(value: str) -> str:
    """A text field that is present but only whitespace is as good as missing."""
    if not value.strip():
        raise ValueError("must not be empty")
    return value


def slug_checker(*, underscore: bool, example: str) -> tuple[re.Pattern[str], str, Callable[[str], str]]:
    """(pattern, rule text, validator) for ids that end up in file names and report ids."""
    pattern = re.compile(r"^[a-z0-9][a-z0-9_-]*$" if underscore else r"^[a-z0-9][a-z0-9-]*$")
    allowed = "lowercase letters, digits, '-' and '_'" if underscore else "lowercase letters, digits and '-'"
    rule = f"must be a slug: {allowed}, starting with a letter or digit"

    def check(value: str) -> str:
        if not pattern.match(value):
            raise ValueError(f"{rule}, e.g. {example}")
        return value

    return pattern, rule, check
