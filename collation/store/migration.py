"""The data store's format as a whole: what ``collate store check`` reports and ``collate store migrate``
does, and the check every process makes when it starts (``require_readable``).

``format.json`` at the store's root says the store's format (``{"format": 2, ...}``): the format it
was created in, or brought to by ``migrate``. A process refuses to start on a store of a newer format
than it reads, with a message naming both; a store without the marker that holds collations was
written before formats had numbers (format 1), which this release reads as it is. Each object also
carries its own format (``collation.core.formats``); ``inventory`` counts them by kind.

``migrate`` rewrites every object of an older format in this release's, then writes the marker. Run
it with the workers stopped (docs/operations.md, "Upgrading"): the records and verdicts are rewritten
under their collation's lock, but a job writing a manuscript or results at the same moment could be
overwritten by the older copy.
"""

from __future__ import annotations

import io
import logging
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from collation import __version__
from collation.core.errors import CollationError, FeaturesFileError, StoreFormatError
from collation.core.formats import STORE_FORMAT, UNVERSIONED, item_format
from collation.store.codecs import json_bytes, parse_json, parse_stored_json, stamped
from collation.store.datastore import CollationNotFound, DataStore
from collation.store.records import now

log = logging.getLogger("collation.store")

MARKER = "format.json"
"""The store's format, at its root."""

KINDS: dict[str, re.Pattern[str]] = {
    "record": re.compile(r"collations/(?P<cid>\w+)/record\.json"),
    "manuscript": re.compile(r"collations/(?P<cid>\w+)/manuscripts/(?P<m>\d+)\.json"),
    "manifest": re.compile(r"collations/\w+/manuscripts/\d+\.manifest\.json"),
    "failure": re.compile(r"collations/(?P<cid>\w+)/failures/[\w-]+\.json"),
    "verdicts": re.compile(r"collations/(?P<cid>\w+)/assessments\.json"),
    "results": re.compile(r"collations/(?P<cid>\w+)/results/(?P<a>\d+)-(?P<b>\d+)\.npz"),
    "features": re.compile(r"features/(?P<key>[\w.]+)\.pt"),
    "array": re.compile(r"scores/.+\.npy"),
    "image": re.compile(r"images/\w\w/\w+\.png"),
    "deletion": re.compile(r"changes/deleted/(?P<cid>\w+)\.json"),
}
"""What each key of the store is (``collation.store.datastore``'s tree), by its path."""

UNNUMBERED = {"manifest": "IIIF document", "array": "format in key", "image": "PNG"}
"""Kinds without a format number of their own, and what says theirs (reported as is, never rewritten)."""


@dataclass
class Inventory:
    """What a store holds, by kind and format (``inventory``).

    Attributes:
        marker: the format ``format.json`` says; None when it has none.
        counts: ``{kind: {format: objects}}``; the format of a kind in ``UNNUMBERED`` is what says it.
        unreadable: ``{key: reason}`` of the objects this release cannot read.
        other: keys that are no object of the store (left alone).
    """

    marker: int | None
    counts: dict[str, Counter] = field(default_factory=dict)
    unreadable: dict[str, str] = field(default_factory=dict)
    other: list[str] = field(default_factory=list)

    @property
    def formats(self) -> set[int]:
        """The format numbers of the numbered objects."""
        return {f for kind, c in self.counts.items() if kind not in UNNUMBERED for f in c if isinstance(f, int)}

    @property
    def store_format(self) -> int:
        """The marker's format, else format 1 (a store written before formats had numbers)."""
        return self.marker if self.marker is not None else UNVERSIONED

    @property
    def current(self) -> bool:
        """Whether the store and every numbered object in it are in this release's format."""
        return self.store_format == STORE_FORMAT and self.formats <= {STORE_FORMAT} and not self.unreadable

    def to_json(self) -> dict[str, Any]:
        return {
            "store_format": self.store_format,
            "marker": self.marker,
            "release": __version__,
            "release_format": STORE_FORMAT,
            "objects": {kind: {str(f): n for f, n in sorted(c.items(), key=str)} for kind, c in self.counts.items()},
            "unreadable": self.unreadable,
            "other": self.other,
        }


def read_marker(store: DataStore) -> int | None:
    """The format ``format.json`` says, checked; None when the store has none.

    Raises:
        StoreFormatError: a newer store than this release reads (or not a format number).
    """
    doc = parse_stored_json(store.read(MARKER), MARKER)
    if doc is None:
        return None
    return item_format(doc.get("format") if isinstance(doc, dict) else doc, f"{store.description}: the store")


def marker_bytes() -> bytes:
    """``format.json`` for this release's format."""
    return json_bytes({"format": STORE_FORMAT, "written_by": f"image-collation {__version__}", "at": now()})


def is_empty(store: DataStore) -> bool:
    """Whether the store holds no collation and no cached work (a new store)."""
    return not any(store.versions(prefix) for prefix in ("collations/", "features/", "scores/"))


def require_readable(store: DataStore) -> int | None:
    """The check a process makes when it starts: the store's format, which this release must read.

    A new (empty) store is marked with this release's format; an unmarked store that holds data is
    format 1, read as it is (``upgrade_note`` says what to run). An unreachable store gives None: the
    process starts, and its requests and jobs report the store's own error.

    Raises:
        StoreFormatError: the store is in a format this release does not read (the message says which
            and what to run).
    """
    try:
        marker = read_marker(store)
        if marker is None and is_empty(store):
            store.create_once(MARKER, marker_bytes())  # two processes starting at once: one writes it
            return read_marker(store)
    except OSError:
        return None
    return UNVERSIONED if marker is None else marker


def upgrade_note(store: DataStore, found: int | None) -> str | None:
    """What to tell an operator whose store is in an older format than this release writes (None: nothing)."""
    if found is None or found >= STORE_FORMAT:
        return None
    why = " (written before formats had numbers)" if found == UNVERSIONED else ""
    return (
        f"data store {store.description} is in format {found}{why}: image-collation {__version__} reads it as "
        f"it is; `collate store migrate` (workers stopped) brings it to format {STORE_FORMAT}"
    )


def hidden(key: str) -> bool:
    """Keys of the store's own housekeeping: locks, its identity, probes, a private Redis, staging and trash."""
    return key.rsplit("/", 1)[-1].startswith(".") or key.startswith((".", "redis/", "trash/", "staging/"))


def kind_of(key: str) -> str | None:
    """The kind of object a key names (``KINDS``), None for anything else."""
    for kind, pattern in KINDS.items():
        if pattern.fullmatch(key):
            return kind
    return None


def read_back(store: DataStore, key: str, kind: str) -> None:
    """Reads a record, manuscript, failure, verdicts or results as the service does (features: their
    header, in ``object_formats``).

    Raises:
        StoreFormatError: naming ``key``, when this release cannot read it (a format from the future,
            truncated bytes, a JSON list where a record belongs, verdicts that are numbers, results
            that are no zip or whose format is two numbers).
    """
    match = KINDS[kind].fullmatch(key)
    assert match is not None, key
    cid = match.groupdict().get("cid")
    if kind == "record":
        store.load_record(cid)
    elif kind in ("manuscript", "failure"):
        store.read_item(key)
    elif kind == "verdicts":
        store.load_assessments(cid)
    elif kind == "results":
        store.load_results(cid, int(match["a"]), int(match["b"]))


def object_formats(store: DataStore, key: str, kind: str) -> list[int | None]:
    """The format numbers an object carries as stored (None: none), one per verdict for verdicts
    (``read_back`` first: this reads only what it checked)."""
    if kind == "verdicts":
        return [item.get("format") for item in parse_json(store.read(key)) or []]
    if kind == "results":
        with np.load(io.BytesIO(store.read(key) or b""), allow_pickle=False) as arrays:
            return [arrays["format"].item() if "format" in arrays.files else None]
    if kind == "features":
        import torch

        path = store.local_file(key)
        if path is None:
            return []
        data = torch.load(path, map_location="cpu", weights_only=True, mmap=True)  # mmap: only the header is read
        return [data.get("format") if isinstance(data, dict) else None]
    doc = parse_json(store.read(key))
    return [doc.get("format") if isinstance(doc, dict) else None]


def inventory(store: DataStore) -> Inventory:
    """Every object of the store by kind and format, and those this release cannot read."""
    try:
        marker = read_marker(store)
    except StoreFormatError as exc:
        return Inventory(marker=exc.found if isinstance(exc.found, int) else None, unreadable={MARKER: exc.message})
    found = Inventory(marker=marker)
    for key in sorted(store.versions("")):
        kind = kind_of(key)
        if kind is None:
            if key != MARKER and not hidden(key):
                found.other.append(key)
            continue
        counts = found.counts.setdefault(kind, Counter())
        if kind in UNNUMBERED:
            counts[UNNUMBERED[kind]] += 1
            continue
        try:
            read_back(store, key, kind)
            formats = object_formats(store, key, kind)
        except CollationError as exc:  # StoreFormatError, FeaturesFileError, CollationNotFound: named
            found.unreadable[key] = exc.message if key in exc.message else f"{key}: {exc.message}"
            continue
        except Exception as exc:  # one object, whatever it holds, never stops the check
            found.unreadable[key] = f"not readable: {type(exc).__name__}: {exc}"
            continue
        for number in formats:
            try:
                counts[item_format(number, key)] += 1
            except StoreFormatError as exc:
                found.unreadable[key] = exc.message
    return found


def migrate(store: DataStore, progress: Callable[[str], None] | None = None) -> Inventory:
    """Rewrites every object of an older format in this release's, then marks the store (when nothing
    is left unreadable); returns the inventory after. Idempotent: objects already current are left alone.

    Raises:
        StoreFormatError: the store is newer than this release (nothing is changed).
    """
    marker = read_marker(store)  # raises on a newer store: nothing touched
    before = inventory(store)
    for key in sorted(store.versions("")):
        kind = kind_of(key)
        if kind is None or kind in UNNUMBERED or key in before.unreadable:
            continue
        try:
            if all(f == STORE_FORMAT for f in object_formats(store, key, kind)):
                continue
            rewrite(store, key, kind)
        except (CollationNotFound, FeaturesFileError) as exc:  # deleted meanwhile, or a corrupt cache entry
            log.warning("Not migrated: %s: %s", key, getattr(exc, "message", exc))
            continue
        if progress is not None:
            progress(key)
    after = inventory(store)
    if not after.unreadable and after.formats <= {STORE_FORMAT} and marker != STORE_FORMAT:
        store.write(MARKER, marker_bytes())
        after.marker = STORE_FORMAT
    return after


def rewrite(store: DataStore, key: str, kind: str) -> None:
    """Reads one object as this release reads it and writes it back in this release's format."""
    match = KINDS[kind].fullmatch(key)
    assert match is not None, key
    cid = match.groupdict().get("cid")
    if kind == "record":
        store.update_record(cid, lambda record: None)  # to_json writes the format; under the lock
    elif kind == "verdicts":
        with store.locked(cid):  # as the API adds verdicts
            store.save_assessments(cid, store.load_assessments(cid))
    elif kind == "results":
        results = store.load_results(cid, int(match["a"]), int(match["b"]))
        if results is not None:
            store.save_results(cid, results)
    elif kind == "features":
        store.save_features(match["key"], store.load_features(match["key"]))
    elif kind in ("manuscript", "failure"):
        doc = store.read_item(key)
        if doc is not None:
            store.write_in_collation(cid, key.removeprefix(store.collation_prefix(cid)), json_bytes(stamped(doc)))
    elif kind == "deletion":
        doc = store.read_item(key)
        if doc is not None:
            store.write(key, json_bytes(stamped(doc)))
    else:
        raise CollationError(f"{key}: no migration for objects of kind {kind}")
