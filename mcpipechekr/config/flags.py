"""The table of `--phaseN-provider` flags, one entry per phase.

Kept apart from the models because both front ends (click in `cli.common`,
doit params in `graph`) and the loader read it, and the phases' validators are
declared from it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProviderFlag:
    """The command-line flag that overrides one phase's provider, `--phaseN-provider`.

    Both front ends build their flags from `PROVIDER_FLAGS` (click options in
    `cli.common`, doit params in `graph`), so a phase's flag is spelled and
    explained once and adding a phase is one entry here plus its
    `ProvidersConfig` field.
    """

    phase: str
    """The `providers.<phase>` field the flag overrides."""
    help: str
    """What the model of this phase does, as the flag's help shows it."""

    @property
    def name(self) -> str:
        """The flag without its dashes: `phase1-provider`."""
        return f"{self.phase}-provider"

    @property
    def flag(self) -> str:
        """The flag as typed and as error messages name it: `--phase1-provider`."""
        return f"--{self.name}"

    @property
    def dest(self) -> str:
        """The parameter the flag's value is stored under: `phase1_provider`."""
        return f"{self.phase}_provider"


PROVIDER_FLAGS: tuple[ProviderFlag, ...] = (
    ProviderFlag(
        "phase0",
        "Model for the phase-0 agent and judge (overrides providers.phase0); demo: the scripted demo "
        "model for tasks without reference calls, and rule-based plausibility.",
    ),
    ProviderFlag(
        "phase05",
        "Model for the tool-selection test (overrides providers.phase05), e.g. openai/gpt-4o-mini; "
        "demo: the offline lexical selector.",
    ),
    ProviderFlag(
        "phase1",
        "Model for the agent (overrides providers.phase1); `demo` is the offline scripted demo model.",
    ),
    ProviderFlag(
        "phase2",
        "Model that reads the traces and writes the narrative (overrides providers.phase2); "
        "demo: the rule-based analysis alone.",
    ),
    ProviderFlag(
        "phase3",
        "Model the fix agent uses (overrides providers.phase3), e.g. anthropic/claude-sonnet-4-6.",
    ),
)
PHASES: tuple[str, ...] = tuple(flag.phase for flag in PROVIDER_FLAGS)


def provider_flag(phase: str) -> ProviderFlag:
    """The `--phaseN-provider` flag of `phase`; ValueError for a phase that has none."""
    for flag in PROVIDER_FLAGS:
        if flag.phase == phase:
            return flag
    raise ValueError(f"unknown phase {phase!r} (phases: {', '.join(PHASES)})")
