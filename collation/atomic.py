"""Atomic file writes: a temporary file beside the target, then ``os.replace``.

A reader (another worker, the API, a later run) sees the old file or the new one, never half a file,
even when the writer is killed mid-write.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import uuid
from pathlib import Path
from typing import Any

import numpy as np


def write_bytes(path: Path, data: bytes, *, create_folders: bool = True) -> None:
    """Writes ``data`` to ``path`` atomically, creating folders as needed (unless ``create_folders`` is
    false: then a missing folder raises ``FileNotFoundError``)."""
    path = Path(path)
    if create_folders:
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(tmp, "xb") as f:  # the name is unique: never someone else's file
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_json(path: Path, obj: Any) -> None:
    """Writes ``obj`` as JSON, atomically."""
    write_bytes(path, json.dumps(obj, indent=1, ensure_ascii=False).encode())


def write_npy(path: Path, array: np.ndarray) -> None:
    """Writes one array in .npy format, atomically."""
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    write_bytes(path, buf.getvalue())
