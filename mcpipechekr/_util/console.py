"""The one rich console the harness prints through, so colour and width rules live in one place.

Output goes to stderr-free stdout for results and to stderr for progress, which
keeps `--format json` output clean when later commands add it.
"""

from __future__ import annotations

from rich.console import Console

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)
