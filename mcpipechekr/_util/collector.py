"""Pausing Python's cyclic garbage collector around work that allocates much and makes no cycles."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block; it resumes on the way out if it was running before.

    Work that holds or makes millions of objects while it allocates steadily (an
    evaluation reading a run's traces, a refresh of the findings index) triggers
    full collections that walk them all and find nothing, since that work makes
    no reference cycles. Reference counting still frees what is dropped. A
    collector already paused by the caller stays paused.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
