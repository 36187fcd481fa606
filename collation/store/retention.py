"""Retention of cached work in a folder store (``collate store prune --older-than DAYS``), and expiry of the
New page's work kept on the server (``expire_drafts``, any store).

Features (``features/``) and score matrices, chunks and candidate pairs (``scores/``) are caches:
every collation's results are in its own folder, so a finished collation never reads them again,
and a later collation that would have reused one computes it again (the planner finds it missing).
They are also most of a store's bytes (docs/operations.md, "Sizing"). ``prune`` removes those not
used for a given time, except those an unfinished collation needs; records, results, verdicts and
region images (which the viewer shows) are never removed.

"Used" is the later of a file's modification and access times: Linux's default ``relatime`` mount
option updates the access time of a file read at most once a day, so a cache entry read by a job
in the last ``days`` is kept (on a ``noatime`` mount, only the time it was written counts). An
object store has no access times: give its bucket a lifecycle rule instead (docs/operations.md).
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, field
from datetime import datetime
from itertools import combinations

from collation.core.errors import InputError, StoreFormatError
from collation.store.datastore import CollationNotFound, DataStore
from collation.store.folder import FolderStore
from collation.store.records import feature_keys, pair_key

CACHES = ("features/", "scores/")
"""The prefixes of cached work that ``prune`` may remove."""
DRAFTS = ("drafts/", "detections/")
"""The prefixes of the New page's work kept on the server, which ``expire_drafts`` removes when old."""


@dataclass
class Pruned:
    """What ``prune`` removed (or, dry, would remove) and what it kept.

    Attributes:
        removed: keys removed; removed_bytes: their size.
        kept_recent: entries used more recently than the limit; kept_in_use: entries an unfinished
            collation needs.
    """

    removed: list[str] = field(default_factory=list)
    removed_bytes: int = 0
    kept_recent: int = 0
    kept_in_use: int = 0
    unreadable: dict[str, str] = field(default_factory=dict)
    """``{collation: reason}`` of the collations whose record or manuscripts this release cannot read
    (``collate store check`` names them): skipped, as the service skips them."""


def in_use(store: DataStore, unreadable: dict[str, str] | None = None) -> tuple[set[str], tuple[str, ...]]:
    """(feature keys, score key prefixes) that the unfinished collations of ``store`` need; a collation
    whose record or manuscript cannot be read (it cannot run either) is skipped and added to ``unreadable``."""
    features: set[str] = set()
    scores: list[str] = []
    for cid in store.list_collations():
        try:
            record = store.load_record(cid)
            if record.terminal:
                continue
            docs = {m: store.load_manuscript(cid, m) for m in range(record.manuscript_count)}
        except CollationNotFound:  # deleted meanwhile
            continue
        except StoreFormatError as exc:
            if unreadable is not None:
                unreadable[cid] = exc.message
            continue
        ready = {m: d.features_key for m, d in docs.items() if d and d.features_key}
        for m, key in ready.items():
            features.update(store.features_key(k) for k in feature_keys(record.options, m, key))
        for a, b in combinations(sorted(ready), 2):
            scores.append(f"scores/{pair_key(record.options, ready[a], ready[b])}")
    return features, tuple(scores)


def last_used(path: os.PathLike | str) -> float:
    """The later of a file's modification and access times (see the module docstring)."""
    stat = os.stat(path)
    return max(stat.st_mtime, stat.st_atime)


def prune(store: DataStore, days: float, *, dry_run: bool = False, now: float | None = None) -> Pruned:
    """Removes the cached features and scores of ``store`` not used for ``days`` days and needed by no
    unfinished collation (with ``dry_run``, only says which).

    Raises:
        InputError: ``store`` is not a folder store (an object store keeps no access times), or
            ``days`` is negative or not finite (nan, inf).
    """
    if not isinstance(store, FolderStore):
        raise InputError(
            f"{store.description}: prune works on a folder store; give an object store's bucket a lifecycle "
            "rule on features/ and scores/ instead (docs/operations.md)",
            field="store",
        )
    if not (math.isfinite(days) and days >= 0):  # nan compares false with everything: it pruned all
        raise InputError(f"--older-than must be a number of days >= 0 (finite), not {days}", field="older_than")
    limit = (time.time() if now is None else now) - days * 86400
    done = Pruned()
    needed, prefixes = in_use(store, done.unreadable)
    for prefix in CACHES:
        for key in sorted(store.versions(prefix)):
            path = store.path(key)
            if key in needed or key.startswith(prefixes):
                done.kept_in_use += 1
                continue
            try:
                if last_used(path) >= limit:
                    done.kept_recent += 1
                    continue
                size = path.stat().st_size
                if not dry_run:
                    store.delete(key)
            except FileNotFoundError:  # removed meanwhile (a pair's chunks once its matrix is stored)
                continue
            done.removed.append(key)
            done.removed_bytes += size
        if not dry_run:
            remove_empty_folders(store.path(prefix))
    return done


def remove_empty_folders(root: os.PathLike | str) -> None:
    """Removes the folders left empty under ``root`` (a pair's chunk folder once its chunks are gone)."""
    for dirpath, dirs, files in os.walk(root, topdown=False):
        if not dirs and not files and os.fspath(dirpath) != os.fspath(root):
            try:
                os.rmdir(dirpath)
            except OSError:  # something was written into it meanwhile
                continue


def changed_at(data: bytes) -> float | None:
    """When a draft or detection document last changed (its ``updated``, else ``created``, ISO 8601 with a
    zone), in seconds since the epoch; None when the document does not say (not JSON, no such field)."""
    try:
        doc = json.loads(data)
        stamp = doc.get("updated") or doc.get("created")
        return datetime.fromisoformat(stamp).timestamp() if isinstance(stamp, str) else None
    except (ValueError, AttributeError):
        return None


def expire_drafts(store: DataStore, days: float, *, dry_run: bool = False, now: float | None = None) -> list[str]:
    """Removes the drafts and detections for review (``DRAFTS``) not changed for ``days`` days (0: none) and
    returns their keys (with ``dry_run``, only says which). A document that does not say when it changed is
    kept: it is not ours to judge.

    Raises:
        InputError: ``days`` is negative or not finite.
    """
    if not (math.isfinite(days) and days >= 0):
        raise InputError(f"the age of drafts must be a number of days >= 0 (finite), not {days}", field="draft_days")
    if days == 0:
        return []
    limit = (time.time() if now is None else now) - days * 86400
    removed = []
    for key in sorted(key for prefix in DRAFTS for key in store.versions(prefix)):
        data = store.read(key)
        when = changed_at(data) if data is not None else None
        if when is None or when >= limit:
            continue
        if not dry_run:
            store.delete(key)
        removed.append(key)
    return removed
