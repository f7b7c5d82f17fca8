"""Validation pieces shared by the files users edit (config.yaml, tasks.yaml, cases files).

One place for "unknown keys are errors", "must not be blank" and the slug rule,
so every file reports them in the same words.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field


class StrictModel(BaseModel):
    """Unknown keys are errors: a typo in a hand-edited file must not be silently ignored."""

    model_config = ConfigDict(extra="forbid")


def not_a_boolean(value: Any) -> Any:
    """YAML's `true` is a bool, and a bool is an int to Python: `min_calls: true` must not read as 1."""
    if isinstance(value, bool):
        raise ValueError("must be a number, not true or false")
    return value


Count = Annotated[int, BeforeValidator(not_a_boolean)]
"""A whole number a user writes; give every Count field an upper bound (`le=`) too, so a 35-digit
value is a file:line error rather than an overflow wherever the number is used."""

Number = Annotated[float, BeforeValidator(not_a_boolean), Field(allow_inf_nan=False)]
"""A finite number a user writes (seconds, fractions); `.inf` and `.nan` are refused."""

MAX_REPEAT = 1000
"""Most repetitions a flag may ask for (`--repeat`, `--attempts`): a typo of many digits must not plan
billions of attempts."""

MAX_CONCURRENCY = 64
"""Most attempts in flight a flag may ask for (`--concurrency`)."""

MAX_SECONDS = 10_000_000
"""Upper bound of every time limit a user sets (about four months): beyond it, timers overflow."""

JSON_INT_RANGE = (-(2**63), 2**64 - 1)
"""Whole numbers that JSON values in a file (arguments, expected results) may hold: what fits 64 bits,
as the JSON encoder of artifacts and hashes needs."""


def json_ints_in_range(value: Any) -> Any:
    """Refuse a whole number beyond 64 bits anywhere in a JSON value, naming it."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, bool):
            continue
        if isinstance(item, int) and not JSON_INT_RANGE[0] <= item <= JSON_INT_RANGE[1]:
            shown = str(item) if len(str(item)) <= 24 else f"{str(item)[:20]}… ({len(str(item))} digits)"
            raise ValueError(f"the number {shown} does not fit in 64 bits")
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return value


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
