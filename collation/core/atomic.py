"""Atomic file writes: a temporary file beside the target, then ``os.replace``.

A reader (another worker, the API, a later run) sees the old file or the new one, never half a file,
even when the writer is killed mid-write.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np


@contextlib.contextmanager
def atomic_writer(path: Path, *, create_folders: bool = True) -> Iterator[IO[bytes]]:
    """A binary file to write ``path`` through, atomically: what is written goes to a temporary file
    beside it, which replaces ``path`` only when the block ends without an exception. Large objects
    are streamed to disk, never held twice in memory (unless ``create_folders`` is false, a missing
    folder raises ``FileNotFoundError``)."""
    path = Path(path)
    if create_folders:
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(tmp, "xb") as f:  # the name is unique: never someone else's file
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_bytes(path: Path, data: bytes, *, create_folders: bool = True) -> None:
    """Writes ``data`` to ``path`` atomically (``atomic_writer``)."""
    with atomic_writer(path, create_folders=create_folders) as f:
        f.write(data)


def write_json(path: Path, obj: Any) -> None:
    """Writes ``obj`` as JSON, atomically."""
    write_bytes(path, json.dumps(obj, indent=1, ensure_ascii=False).encode())


def write_npy(path: Path, array: np.ndarray) -> None:
    """Writes one array in .npy format, atomically."""
    with atomic_writer(path) as f:
        np.save(f, array, allow_pickle=False)
