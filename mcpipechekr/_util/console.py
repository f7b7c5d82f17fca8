"""The one rich console the harness prints through, so colour and width rules live in one place.

Results go to stdout and progress to stderr, which keeps `--format json` output
clean.
"""

from __future__ import annotations

from rich.console import Console

# soft_wrap: messages are never broken mid-line, so logs and pipes keep one message per line.
console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)
