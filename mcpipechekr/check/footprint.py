"""What a server can write that `check` can see: a bounded snapshot of folders and files, and its diff.

PC-12 (check/honesty.py) holds a tool annotated `readOnlyHint: true` to its word
by comparing two snapshots taken around its calls. A snapshot must be cheap
enough to take twice per tool and precise enough that a difference is the
server's doing, so:

- it is bounded: at most `MAX_ENTRIES` entries over all its roots, listed
  breadth-first in name order. A cut snapshot says so (`partial`) and records
  which folders it listed completely (`listed`): a created or deleted entry is
  claimed only where its folder was listed completely in both snapshots, so
  the unseen part never yields a false change;
- a file up to `MAX_HASHED_FILE` bytes is compared by content (a hash, kept
  between snapshots while its size, mtime, ctime and inode stay the same, so
  only the first snapshot reads the files); a file rewritten with the same
  bytes is no change. A larger file, or one past the `HASH_BUDGET` of new
  bytes one snapshot may read, is compared by size and mtime_ns;
- symbolic links are recorded as links (their target text) and never
  followed, so nothing outside the roots is read;
- what is nobody's business is not listed: check's own folders (`excluded`:
  the findings home, the runs folder, the server's log), byte-code and
  dependency caches (`__pycache__`, `node_modules`, `.venv`, …, written by an
  interpreter's lazy imports, not by a tool), SQLite's companion files
  (`-wal`, `-shm`, `-journal`, which a reader of a WAL database creates), and
  inside a `.git` folder everything but HEAD, refs, packed-refs and config
  (`git status` rewrites the index while only reading).

Directories are not compared by their own mtime: their entries say what
changed, and a temporary file created and removed within a call is not a
change this can see.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

MAX_ENTRIES = 5000
"""Entries one snapshot records, over all its roots; past it the snapshot is partial."""
MAX_HASHED_FILE = 1 << 20
"""Files up to this size (1 MiB) are compared by content, larger ones by size and mtime."""
HASH_BUDGET = 64 << 20
"""Bytes one snapshot may read to hash files it has not hashed before (64 MiB)."""

SKIPPED_NAMES = frozenset(
    {
        "__pycache__",
        "node_modules",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".cache",
    }
)
"""Folders an interpreter, a package manager or a tool's cache writes on its own."""
SKIPPED_SUFFIXES = (".pyc", ".pyo", "-wal", "-shm", "-journal")
"""Byte code, and the files SQLite keeps beside a database while it is open (even for reading)."""
GIT_WATCHED = frozenset({"HEAD", "refs", "packed-refs", "config"})
"""What of a `.git` folder is watched: a commit, a branch or a tag changes one of these."""

Kind = Literal["file", "dir", "link", "other"]


@dataclass(frozen=True)
class Entry:
    """One path as a snapshot saw it."""

    kind: Kind
    size: int = 0
    mtime_ns: int = 0
    digest: str | None = None
    """The content's hash, for a file small enough (and within the budget)."""
    target: str | None = None
    """A link's target, as written."""


@dataclass
class Footprint:
    """A snapshot: every entry under the roots, up to the bound."""

    roots: list[str]
    entries: dict[str, Entry] = field(default_factory=dict)
    listed: set[str] = field(default_factory=set)
    """Folders whose every (watched) child is in `entries`."""
    partial: bool = False
    """True when the bound cut the walk: some entries were not seen."""
    ms: float = 0.0
    """Wall time it took."""


@dataclass
class Changes:
    """What differs between two snapshots, each list sorted."""

    created: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.created or self.deleted or self.modified)

    def paths(self) -> set[str]:
        return {*self.created, *self.deleted, *self.modified}

    def without(self, ignored: set[str]) -> Changes:
        """These changes less the paths in `ignored` (and anything below them)."""

        def keep(path: str) -> bool:
            return not _inside_any(path, ignored)

        return Changes(
            [p for p in self.created if keep(p)],
            [p for p in self.deleted if keep(p)],
            [p for p in self.modified if keep(p)],
        )

    def merge(self, other: Changes) -> None:
        for mine, theirs in (
            (self.created, other.created),
            (self.deleted, other.deleted),
            (self.modified, other.modified),
        ):
            mine.extend(path for path in theirs if path not in mine)
            mine.sort()


def watch_roots(candidates: Iterable[str | Path], excluded: Iterable[str | Path] = ()) -> list[str]:
    """The existing, resolved candidates, less any inside another (or inside an excluded path), in order."""
    out: list[str] = []
    shut = [_resolved(path) for path in excluded]
    for candidate in candidates:
        path = _resolved(candidate)
        if path is None or not os.path.lexists(path) or _inside_any(path, shut):
            continue
        if _inside_any(path, out):
            continue
        out = [root for root in out if not _inside(root, path)]
        out.append(path)
    return out


def _resolved(path: str | Path) -> str | None:
    try:
        return str(Path(path).expanduser().resolve())
    except (OSError, RuntimeError):
        return None


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _inside_any(path: str, folders: Iterable[str | None]) -> bool:
    return any(folder is not None and _inside(path, folder) for folder in folders)


@dataclass
class Snapshotter:
    """Takes snapshots of the same roots, remembering the hashes of files that did not change."""

    roots: list[str]
    excluded: list[str] = field(default_factory=list)
    max_entries: int | None = None
    """None: the module's MAX_ENTRIES at the time of the snapshot."""
    _hashes: dict[tuple[str, int, int, int, int], str] = field(default_factory=dict)

    def take(self) -> Footprint:
        started = time.perf_counter()
        bound = self.max_entries if self.max_entries is not None else MAX_ENTRIES
        shot = Footprint(roots=list(self.roots))
        budget = [HASH_BUDGET]
        queue: deque[str] = deque()
        for root in self.roots:
            if len(shot.entries) >= bound:
                shot.partial = True
                break
            entry = self._entry(root, budget)
            if entry is None:
                continue
            shot.entries[root] = entry
            if entry.kind == "dir":
                queue.append(root)
        while queue:
            folder = queue.popleft()
            try:
                with os.scandir(folder) as listing:
                    children = sorted(listing, key=lambda child: child.name)
            except OSError:
                continue
            complete = True
            for child in children:
                if not self._watched(folder, child.name) or _inside_any(child.path, self.excluded):
                    continue
                if len(shot.entries) >= bound:
                    shot.partial, complete = True, False
                    break
                entry = self._entry(child.path, budget)
                if entry is None:
                    continue
                shot.entries[child.path] = entry
                if entry.kind == "dir":
                    queue.append(child.path)
            if complete:
                shot.listed.add(folder)
            if shot.partial:
                break
        if queue:
            shot.partial = True
        shot.ms = (time.perf_counter() - started) * 1000
        return shot

    @staticmethod
    def _watched(folder: str, name: str) -> bool:
        if name in SKIPPED_NAMES or name.endswith(SKIPPED_SUFFIXES):
            return False
        return os.path.basename(folder) != ".git" or name in GIT_WATCHED

    def _entry(self, path: str, budget: list[int]) -> Entry | None:
        try:
            info = os.lstat(path)
        except OSError:
            return None  # gone between the listing and now
        mode = info.st_mode
        if stat.S_ISLNK(mode):
            try:
                target = os.readlink(path)
            except OSError:
                target = None
            return Entry("link", target=target)
        if stat.S_ISDIR(mode):
            return Entry("dir")
        if not stat.S_ISREG(mode):
            return Entry("other", mtime_ns=info.st_mtime_ns)
        return Entry("file", info.st_size, info.st_mtime_ns, self._digest(path, info, budget))

    def _digest(self, path: str, info: os.stat_result, budget: list[int]) -> str | None:
        if info.st_size > MAX_HASHED_FILE:
            return None
        key = (path, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
        known = self._hashes.get(key)
        if known is not None:
            return known
        if info.st_size > budget[0]:
            return None
        try:
            with open(path, "rb") as handle:
                data = handle.read(MAX_HASHED_FILE + 1)
        except OSError:
            return None
        budget[0] -= len(data)
        digest = hashlib.blake2b(data, digest_size=16).hexdigest()
        self._hashes[key] = digest
        return digest


def compare(before: Footprint, after: Footprint) -> Changes:
    """What was created, deleted or modified between two snapshots of the same roots.

    A created or deleted path counts only when it is a root or its folder was
    listed completely in both snapshots, and only the topmost one is named (a
    new folder, not each file in it); a path seen in both is modified when its
    kind, its content (both hashed), its size and mtime (otherwise) or its
    link target changed.
    """
    roots = set(before.roots) | set(after.roots)

    def judged(path: str) -> bool:
        parent = os.path.dirname(path)
        return path in roots or (parent in before.listed and parent in after.listed)

    created = sorted(path for path in after.entries if path not in before.entries and judged(path))
    deleted = sorted(path for path in before.entries if path not in after.entries and judged(path))
    modified = sorted(
        path
        for path, old in before.entries.items()
        if path in after.entries and _differs(old, after.entries[path])
    )
    return Changes(created, deleted, modified)


def _differs(old: Entry, new: Entry) -> bool:
    if old.kind != new.kind:
        return True
    if old.kind == "link":
        return old.target != new.target
    if old.kind != "file":
        return False
    if old.digest is not None and new.digest is not None:
        return old.digest != new.digest or old.size != new.size
    return old.size != new.size or old.mtime_ns != new.mtime_ns
