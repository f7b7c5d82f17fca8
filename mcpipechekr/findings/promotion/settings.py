"""config.json in the findings home: settings that belong to the evidence, not to one project file.

Optional; a missing file means defaults. Unknown keys are errors like in every
file users edit, and a bad value is reported with the file, line and field.
"""

from __future__ import annotations

import math

from pydantic import Field

from mcpipechekr.artifacts._base import ArtifactModel
from mcpipechekr.artifacts.atomic import read_model
from mcpipechekr.errors import UserError
from mcpipechekr.findings.home import Home
from mcpipechekr.findings.promotion.scoring import DEFAULT_THRESHOLD


class HomeSettings(ArtifactModel):
    """`config.json` in the findings home."""

    promotion_threshold: float | None = Field(
        default=None,
        ge=0.0,
        allow_inf_nan=False,
        description="Score a group must reach to become a finding (see docs/findings.md); "
        "absent: the calibrated default.",
    )


def load_settings(home: Home) -> HomeSettings:
    """The home's settings, or the defaults when it has no config.json."""
    if not home.config_file.exists():
        return HomeSettings()
    return read_model(home.config_file, HomeSettings)


def promotion_threshold(home: Home, override: float | None = None) -> float:
    """`--threshold` beats config.json's `promotion_threshold`, which beats the calibrated default."""
    if override is not None:
        if not math.isfinite(override) or override < 0:
            raise UserError(f"--threshold must be a finite number >= 0, got {override}")
        return override
    configured = load_settings(home).promotion_threshold
    return DEFAULT_THRESHOLD if configured is None else configured
