"""Values to bytes and back, as the data store keeps them: canonical JSON and its digest, .npy and .npz."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np

from collation.core.errors import StoreFormatError
from collation.core.formats import STORE_FORMAT, item_format


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no spaces: equal inputs give equal strings, hence equal hashes."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(obj: Any, length: int = 32) -> str:
    """A hex sha256 of ``obj``'s canonical JSON, truncated to ``length`` characters."""
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()[:length]


def read_json(path: Path) -> Any:
    """Reads JSON, or returns None when the file does not exist."""
    try:
        return json.loads(path.read_bytes())
    except FileNotFoundError:
        return None


def parse_json(data: bytes | None) -> Any:
    """JSON from an object's bytes, or None for an absent object."""
    return None if data is None else json.loads(data)


def parse_stored_json(data: bytes | None, key: str) -> Any:
    """``parse_json`` of a stored object named ``key``, whose bytes may be anything (truncated, nested
    50,000 deep, not UTF-8).

    Raises:
        StoreFormatError: naming ``key``, when the bytes are no JSON this release reads.
    """
    try:
        return parse_json(data)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise StoreFormatError(f"{key}: not readable JSON ({type(exc).__name__})", found=None) from exc


def npy_bytes(array: np.ndarray) -> bytes:
    """One array as the bytes of a .npy file."""
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


def parse_npy(data: bytes | None) -> np.ndarray | None:
    return None if data is None else np.load(io.BytesIO(data), allow_pickle=False)


def npz_bytes(**arrays: np.ndarray) -> bytes:
    """Several arrays as the bytes of one .npz file."""
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def json_bytes(obj: Any) -> bytes:
    """``obj`` as the JSON of ``collation.core.atomic.write_json``."""
    return json.dumps(obj, indent=1, ensure_ascii=False).encode()


def stamped(obj: dict[str, Any]) -> dict[str, Any]:
    """A JSON object as the store writes it: its ``format`` first (``collation.core.formats``)."""
    return {"format": STORE_FORMAT, **obj}


def unstamped(doc: dict[str, Any], where: str) -> dict[str, Any]:
    """A JSON object as read back, its format checked and removed (format 1 had none).

    Raises:
        StoreFormatError: naming ``where``, for a format this release does not read.
    """
    item_format(doc.get("format"), where)
    return {k: v for k, v in doc.items() if k != "format"}
