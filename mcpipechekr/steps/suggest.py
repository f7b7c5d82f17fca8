"""`lint --suggest`: an evaluated run → description_suggestions.json, new texts for bugs a description caused.

The step reads the run (bug_report.json, tools.json, traces) and the config's
tasks.yaml and selection model, and writes its one file atomically; it changes
nothing else of the run, so it may run again after every evaluation. The fix
loop reads the file when it builds a bug's prompt (`fix.evidence.suggestions_for`).
"""

from __future__ import annotations

from mcpipechekr.artifacts import RunDir, write_model
from mcpipechekr.artifacts.description_suggestions import DescriptionSuggestions
from mcpipechekr.config import Config
from mcpipechekr.lint.suggest import suggest_descriptions


def suggest_step(config: Config, run_dir: RunDir, *, repeat: int = 1) -> DescriptionSuggestions:
    """Make the run's description suggestions, write description_suggestions.json, return them."""
    suggestions = suggest_descriptions(config, run_dir, repeat=repeat)
    write_model(run_dir.description_suggestions, suggestions)
    return suggestions
