"""A bounded local cache of immutable objects: what a worker of an object store reads more than once.

Features, region images and candidate pairs are keyed by their content, so a local copy never goes
stale. A worker that scores many chunks of one pair reads the same two feature files for each of
them; with the cache it downloads them once. The cache is a folder (``<root>/<key>``), filled
atomically, so several processes on one machine can share it; when it holds more than ``max_bytes``
the least recently used files go (the one just filled stays, however large).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO

from collation.core.atomic import atomic_writer


class FileCache:
    """Local copies of immutable objects under ``root``, at most about ``max_bytes`` in all."""

    def __init__(self, root: str | Path, max_bytes: int) -> None:
        self.root = Path(root)
        self.max_bytes = int(max_bytes)
        self._lock = threading.Lock()
        self._size: int | None = None  # bytes held, counted on first use, then kept up to date

    def path(self, key: str) -> Path:
        return self.root / key

    def get(self, key: str) -> Path | None:
        """The local copy of ``key``, marked as just used; None when there is none."""
        path = self.path(key)
        try:
            os.utime(path)  # the eviction order is the modification time
        except FileNotFoundError:
            return None
        return path

    def fill(self, key: str, download: Callable[[IO[bytes]], None]) -> Path:
        """Writes ``key``'s local copy through ``download(file)`` (atomically), then trims the cache."""
        path = self.path(key)
        with atomic_writer(path) as f:
            download(f)
        self._added(path)
        return path

    def adopt(self, key: str, file: Path) -> Path:
        """Moves a complete local file (just uploaded) into the cache as ``key``'s copy."""
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        os.replace(file, path)
        self._added(path)
        return path

    def _added(self, path: Path) -> None:
        with self._lock:
            if self._size is None:
                self._size = sum(size for _, size, _ in self._files())
            else:
                with contextlib.suppress(FileNotFoundError):
                    self._size += path.stat().st_size
            if self._size > self.max_bytes:
                self._trim(keep=path)

    def _files(self) -> list[tuple[float, int, Path]]:
        """(modification time, size, path) of every cached file (not the temporary ones)."""
        out = []
        for dirpath, _dirs, files in os.walk(self.root):
            for name in files:
                if name.startswith("."):
                    continue
                path = Path(dirpath) / name
                with contextlib.suppress(FileNotFoundError):
                    stat = path.stat()
                    out.append((stat.st_mtime, stat.st_size, path))
        return out

    def _trim(self, keep: Path) -> None:
        files = sorted(self._files())
        total = sum(size for _, size, _ in files)
        for _, size, path in files:  # oldest first
            if total <= self.max_bytes:
                break
            if path == keep:
                continue
            with contextlib.suppress(FileNotFoundError):
                path.unlink()  # a reader that opened it keeps its data (POSIX)
                total -= size
        self._size = total
