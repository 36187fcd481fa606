"""The data store: the system of record of the service, behind one interface.

Redis only holds queues and transient job state. Everything a collation needs to be resumed or
served lives in the data store, under these keys, each written whole and atomically, so that a
reader never sees half an object and a killed worker never leaves one behind:

```text
DATA_DIR/
├── format.json                        the store's format: every object in it is readable in this one
├── collations/<id>/
│   ├── record.json                    request, options, status, progress, errors
│   ├── manuscripts/<m>.json           manifest label, regions (canvas, xywh), image digests, errors
│   ├── manuscripts/<m>.manifest.json  the manifest as fetched (for the derived manifest)
│   ├── failures/<step>.json           steps that failed for good (after RQ's retries)
│   ├── results/<a>-<b>.npz            S, N_S, P_S and the seeds of a manuscript pair (and T, with transpositions)
│   └── assessments.json               expert verdicts
├── images/<ab>/<digest>.png           region images by content
├── features/<key>.pt                  MultiScaleFeatures by backbone + image content + parameters
│   features/<key>.<option>.pt         the same images under every transposition of an option (mirror, all)
├── changes/deleted/<id>.json          a deleted published collation (the Change Discovery feed's Delete)
└── scores/<key>.npy                   pair score matrices by the two feature keys + similarity + seed + kernel
    scores/<key>.T.npy                 with transpositions: the int8 winners T of the matrix, written before it
    scores/<key>.pairs.npy             candidate pairs (P, 2) of a pruned pair while its matrix is computed
    scores/<key>.c<C>/<k>.npy          chunk results while a matrix is being computed
    scores/<key>.c<C>/<k>.T.npy        with transpositions: the chunk's winners, written before its scores
```

Every object carries the format it was written in (``collation.core.formats``): JSON objects and
verdicts a ``"format"`` key, results a ``format`` array, features a ``"format"`` entry; arrays (.npy)
theirs in their key. A region image is a PNG named by its content; a fetched manifest is the library's
document as it was.

Features and scores are shared by every collation: a collation that adds a third manuscript to
two already compared reuses their features and their pair's scores.

``DataStore`` names every key and builds every operation of the service on a few primitives (read,
write, list, delete an object by key; a local file for large immutable objects) and five collation
operations whose guarantees each implementation keeps its own way (create, lock, update, write into,
delete). Two implementations:

- ``collation.store.folder.FolderStore``: a folder on one disk (``COLLATION_DATA_DIR``), the
  default: temporary file then ``os.replace``, an ``flock`` per collation.
- ``collation.store.objects.ObjectStore``: an S3-compatible bucket (``COLLATION_STORE_URL``), for
  API and workers on machines that share no disk: conditional puts, a lease per collation, and a
  bounded local cache of the immutable objects a worker reads.

``collation.store.location.open_store`` picks one from the settings.

Longer than 400 lines because every key of the data store lives here, in one place, so that no other
module builds a key of its own (Redis keys: ``collation.store.redis_keys``; bytes: ``collation.store.codecs``).
"""

from __future__ import annotations

import abc
import contextlib
import io
import os
import uuid
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np
from PIL import Image

from collation.core.errors import CollationError, StoreFormatError
from collation.core.formats import STORE_FORMAT, item_format
from collation.store.codecs import (
    json_bytes,
    npy_bytes,
    npz_bytes,
    parse_json,
    parse_npy,
    parse_stored_json,
    stamped,
    unstamped,
)
from collation.store.records import CollationRecord
from collation.store.stepnames import Step
from collation.store.stored import Assessment, PairResults, PreparedManuscript, ordered

if TYPE_CHECKING:
    from collation.engine.features import MultiScaleFeatures


DELETIONS = "changes/deleted/"
"""Where ``record_deletion`` keeps its notes."""


class CollationNotFound(CollationError):
    """The collation does not exist (never created, or deleted)."""

    http_status = 404


class DataStore(abc.ABC):
    """The data store: every key and every operation of the service (see the module docstring).

    Keys are ``/``-separated paths relative to the store's root (``collations/<id>/record.json``).
    An implementation provides the primitives (``read``, ``write``, ``writer``, ``has``,
    ``delete``, ``delete_prefix``, ``versions``, ``local_file``) and the collation operations
    (``create_collation``, ``locked``, ``update_record``, ``write_in_collation``,
    ``delete_collation``). Safe to share between threads and processes.
    """

    description: str
    """Where the store is, for messages and logs (``folder /srv/data``, ``s3://bucket/prefix``)."""

    # ----------------------------------------------------------------------------------------------
    # Primitives

    @abc.abstractmethod
    def read(self, key: str) -> bytes | None:
        """The object's bytes, or None when it does not exist."""

    @abc.abstractmethod
    def write(self, key: str, data: bytes) -> None:
        """Writes an object whole and atomically (readers see the old bytes or the new ones)."""

    @abc.abstractmethod
    def writer(self, key: str) -> contextlib.AbstractContextManager[IO[bytes]]:
        """A binary file to write a large object through: it appears, whole, only when the block
        ends without an exception (streamed: never held twice in memory)."""

    @abc.abstractmethod
    def has(self, key: str) -> bool:
        """Whether the object exists."""

    @abc.abstractmethod
    def delete(self, key: str) -> None:
        """Deletes an object (nothing when absent)."""

    @abc.abstractmethod
    def delete_prefix(self, prefix: str) -> None:
        """Deletes every object whose key starts with ``prefix`` (a folder: ends with ``/``)."""

    @abc.abstractmethod
    def versions(self, prefix: str) -> dict[str, str]:
        """``{key: version}`` of the objects under ``prefix``; a version changes when the object does."""

    @abc.abstractmethod
    def local_file(self, key: str) -> Path | None:
        """A file on this machine with the bytes of an immutable object (features, images, candidate
        pairs), to read in place; None when the object does not exist."""

    def identity(self) -> str:
        """A random id written once into the store (``.store-id``): two processes whose stores give
        the same identity share one store (``collation.store.sharing``)."""
        key = ".store-id"
        found = self.read(key)
        if found is None:
            self.create_once(key, uuid.uuid4().hex.encode())
            found = self.read(key)
        return (found or b"").decode()

    @abc.abstractmethod
    def create_once(self, key: str, data: bytes) -> bool:
        """Writes an object only if it does not exist; False when it did (another writer won)."""

    min_free = 0
    """Bytes a store's disk must keep free to take work (``COLLATION_MIN_FREE_BYTES``, set by ``open_store``)."""

    def free_bytes(self) -> int | None:
        """Bytes free on the store's disk; None when the store has no disk of its own (an object store)."""
        return None

    def probe(self) -> None:
        """Writes and deletes a small object; raises what the store raises when it cannot be written."""
        key = f".probe/{os.getpid()}-{uuid.uuid4().hex[:8]}"
        try:
            self.write(key, b"probe")
        finally:
            with contextlib.suppress(OSError):
                self.delete(key)

    # ----------------------------------------------------------------------------------------------
    # Collation records: the operations each implementation guarantees its own way

    @staticmethod
    def collation_prefix(cid: str) -> str:
        assert cid.isalnum(), f"bad collation id {cid!r}"
        return f"collations/{cid}/"

    @abc.abstractmethod
    def create_collation(self, record: CollationRecord) -> bool:
        """Creates a collation from its first record; False when it already exists (same inputs).
        A collation never exists without its record."""

    @abc.abstractmethod
    def locked(self, cid: str) -> contextlib.AbstractContextManager[None]:
        """Holds the collation's lock (across processes and, for a shared store, machines).

        Raises:
            CollationNotFound: the collation does not exist (or was deleted meanwhile).
        """

    def update_record(self, cid: str, change: Callable[[CollationRecord], Any]) -> CollationRecord:
        """Read-modify-write of the record under the collation's lock (``change`` changes the record in
        place); returns the new record."""
        with self.locked(cid):
            record = self.load_record(cid)
            change(record)
            self.write_in_collation(cid, "record.json", json_bytes(record.to_json()))
            return record

    @abc.abstractmethod
    def write_in_collation(self, cid: str, relative: str, data: bytes) -> None:
        """Writes an object of a collation atomically (``relative`` to its prefix, one sub-folder deep
        at most), never bringing back a deleted collation.

        Raises:
            CollationNotFound: the collation was deleted (before or during the write).
        """

    @abc.abstractmethod
    def delete_collation(self, cid: str) -> bool:
        """Deletes a collation (not the shared features and scores); False if absent. Readers see
        the collation or nothing."""

    def read_in_collation(self, cid: str, relative: str) -> bytes | None:
        return self.read(self.collation_prefix(cid) + relative)

    def exists(self, cid: str) -> bool:
        """Whether collation ``cid`` exists."""
        return self.has(self.collation_prefix(cid) + "record.json")

    def load_record(self, cid: str) -> CollationRecord:
        """The collation's record, typed (``CollationRecord``).

        Raises:
            CollationNotFound: unknown or deleted id.
        """
        key = self.collation_prefix(cid) + "record.json"
        record = self.read_item(key)
        if record is None:
            raise CollationNotFound(f"no collation {cid!r}", field="id")
        try:
            return CollationRecord.from_json(record)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:  # a JSON object, but not a record
            raise StoreFormatError(f"{key}: not a collation record ({type(exc).__name__}: {exc})", found=None) from exc

    def read_item(self, key: str) -> dict[str, Any] | None:
        """A JSON object of the store (None when absent), its format checked and removed.

        Raises:
            StoreFormatError: written in a format this release does not read, or not a JSON object at all
                (truncated, nested too deep, a list): the message names the key.
        """
        doc = parse_stored_json(self.read(key), key)
        if doc is not None and not isinstance(doc, dict):
            raise StoreFormatError(f"{key}: not a JSON object but {type(doc).__name__}", found=None)
        return None if doc is None else unstamped(doc, key)

    def list_collations(self) -> list[str]:
        """The ids of every collation (those with a record), sorted."""
        ids = []
        for key in self.versions("collations/"):
            parts = key.split("/")
            if len(parts) == 3 and parts[2] == "record.json":
                ids.append(parts[1])
        return sorted(ids)

    def collation_versions(self, cid: str) -> dict[str, str]:
        """``{relative key: version}`` of a collation's objects (a cache key of documents built from them)."""
        prefix = self.collation_prefix(cid)
        return {key.removeprefix(prefix): v for key, v in self.versions(prefix).items()}

    # ----------------------------------------------------------------------------------------------
    # Manuscripts

    def save_manuscript(self, cid: str, doc: PreparedManuscript, manifest: dict | None = None) -> None:
        """Writes a prepared manuscript (its manifest first, so the doc's presence means both)."""
        m = doc.index
        if manifest is not None:
            self.write_in_collation(cid, f"manuscripts/{m}.manifest.json", json_bytes(manifest))
        self.write_in_collation(cid, f"manuscripts/{m}.json", json_bytes(stamped(doc.to_dict())))

    def load_manuscript(self, cid: str, m: int) -> PreparedManuscript | None:
        """A prepared manuscript, or None.

        Raises:
            StoreFormatError: not a prepared manuscript of a format this release reads (the message names it).
        """
        key = f"{self.collation_prefix(cid)}manuscripts/{m}.json"
        data = self.read_item(key)
        try:
            return None if data is None else PreparedManuscript.from_dict(data)
        except (KeyError, TypeError, ValueError) as exc:  # a field missing or of another type
            raise StoreFormatError(
                f"{key}: not a prepared manuscript ({type(exc).__name__}: {exc})", found=None
            ) from exc

    def forget_manuscript(self, cid: str, m: int) -> None:
        """Deletes a prepared manuscript (its document first: without it, the manuscript is not read)."""
        self.delete(f"{self.collation_prefix(cid)}manuscripts/{m}.json")
        self.delete(f"{self.collation_prefix(cid)}manuscripts/{m}.manifest.json")

    def has_manuscript(self, cid: str, m: int) -> bool:
        return self.has(f"{self.collation_prefix(cid)}manuscripts/{m}.json")

    def load_manifest(self, cid: str, m: int) -> dict | None:
        """The manifest as fetched: the library's document, as it was (its format is IIIF's, and its
        manuscript's document, written after it, carries the store's)."""
        return parse_json(self.read_in_collation(cid, f"manuscripts/{m}.manifest.json"))

    # ----------------------------------------------------------------------------------------------
    # Failures of steps (after retries)

    def record_failure(self, cid: str, step: Step, message: str) -> None:
        """Records that ``step`` failed for good (no-op when the collation is gone)."""
        with contextlib.suppress(CollationNotFound):
            self.write_in_collation(
                cid, f"failures/{step.name}.json", json_bytes(stamped({"step": step.name, "message": message}))
            )

    def load_failures(self, cid: str) -> dict[Step, str]:
        """The steps of a collation that failed for good, with their messages."""
        out = {}
        for key in sorted(self.versions(f"{self.collation_prefix(cid)}failures/")):
            doc = self.read_item(key) if key.endswith(".json") else None
            if doc:
                out[Step.parse(doc["step"])] = doc["message"]
        return out

    def clear_failures(self, cid: str) -> None:
        self.delete_prefix(f"{self.collation_prefix(cid)}failures/")

    # ----------------------------------------------------------------------------------------------
    # Region images, by content

    @staticmethod
    def image_key(image_digest: str) -> str:
        return f"images/{image_digest[:2]}/{image_digest}.png"

    def save_image(self, image: Image.Image, image_digest: str) -> None:
        key = self.image_key(image_digest)
        if self.has(key):
            return
        with self.writer(key) as f:
            image.convert("RGB").save(f, format="PNG", compress_level=1)

    def load_image(self, image_digest: str) -> Image.Image:
        """A region image.

        Raises:
            FileNotFoundError: no image of that digest.
        """
        path = self.local_file(self.image_key(image_digest))
        if path is None:
            raise FileNotFoundError(f"no region image {image_digest} in {self.description}")
        with Image.open(path) as image:
            return image.convert("RGB")

    # ----------------------------------------------------------------------------------------------
    # Features and scores, by content and parameters

    @staticmethod
    def features_key(key: str) -> str:
        return f"features/{key}.pt"

    def has_features(self, key: str) -> bool:
        return self.has(self.features_key(key))

    def save_features(self, key: str, features: MultiScaleFeatures) -> None:
        """Writes features atomically, streamed."""
        with self.writer(self.features_key(key)) as f:
            features.write(f)

    def load_features(self, key: str, device: str = "cpu") -> MultiScaleFeatures:
        """Features ``key``, checked (``MultiScaleFeatures.load``).

        Raises:
            FeaturesFileError: absent, or not a valid features file.
        """
        from collation.core.errors import FeaturesFileError
        from collation.engine.features import MultiScaleFeatures

        path = self.local_file(self.features_key(key))
        if path is None:
            raise FeaturesFileError(f"{self.description}: {self.features_key(key)}", "no such file")
        return MultiScaleFeatures.load(path, device=device)

    @staticmethod
    def scores_key(key: str) -> str:
        return f"scores/{key}.npy"

    @staticmethod
    def winners_key(key: str) -> str:
        """The int8 winners T of a pair's matrix scored with transpositions (docs/transpositions.md)."""
        return f"scores/{key}.T.npy"

    @staticmethod
    def chunk_key(key: str, chunk_pairs: int, k: int, winners: bool = False) -> str:
        """Chunk ``k``'s scores, or its winners (written before its scores, so a chunk that is there has them)."""
        return f"scores/{key}.c{chunk_pairs}/{k}{'.T' if winners else ''}.npy"

    @staticmethod
    def pairs_key(key: str) -> str:
        return f"scores/{key}.pairs.npy"

    def has_scores(self, key: str) -> bool:
        return self.has(self.scores_key(key))

    def load_scores(self, key: str) -> np.ndarray | None:
        return parse_npy(self.read(self.scores_key(key)))

    def load_winners(self, key: str) -> np.ndarray | None:
        return parse_npy(self.read(self.winners_key(key)))

    def save_scores(self, key: str, matrix: np.ndarray, winners: np.ndarray | None = None) -> None:
        """Stores a pair's matrix, and with transpositions its winners first: the matrix's presence means both."""
        if winners is not None:
            self.write(self.winners_key(key), npy_bytes(winners))
        self.write(self.scores_key(key), npy_bytes(matrix))

    def has_chunk(self, key: str, chunk_pairs: int, k: int) -> bool:
        return self.has(self.chunk_key(key, chunk_pairs, k))

    def save_chunk(self, key: str, chunk_pairs: int, k: int, scores: np.ndarray, winners: np.ndarray | None) -> None:
        """Stores chunk ``k``'s scores, and with transpositions its winners first."""
        if winners is not None:
            self.write(self.chunk_key(key, chunk_pairs, k, winners=True), npy_bytes(winners))
        self.write(self.chunk_key(key, chunk_pairs, k), npy_bytes(scores))

    def load_chunk(self, key: str, chunk_pairs: int, k: int, winners: bool = False) -> np.ndarray | None:
        return parse_npy(self.read(self.chunk_key(key, chunk_pairs, k, winners=winners)))

    def save_pairs(self, key: str, pairs: np.ndarray) -> None:
        """Writes the ``(P, 2)`` int64 candidate pairs of a pruned pair, row-major (atomically)."""
        with self.writer(self.pairs_key(key)) as f:
            np.save(f, np.ascontiguousarray(pairs, dtype=np.int64))

    def load_pairs(self, key: str, mmap_mode: str | None = None) -> np.ndarray | None:
        path = self.local_file(self.pairs_key(key))
        if path is None:
            return None
        try:
            return np.load(path, mmap_mode=mmap_mode, allow_pickle=False)
        except FileNotFoundError:  # dropped meanwhile
            return None

    def pair_count(self, key: str) -> int | None:
        """How many candidate pairs are stored for ``key`` (None: not computed yet)."""
        pairs = self.load_pairs(key, mmap_mode="r")
        return None if pairs is None else int(pairs.shape[0])

    def drop_chunks(self, key: str, chunk_pairs: int) -> None:
        """Drops a pair's chunks and candidate pairs once its matrix (-inf where unscored) is stored."""
        self.delete_prefix(f"scores/{key}.c{chunk_pairs}/")
        self.delete(self.pairs_key(key))

    # ----------------------------------------------------------------------------------------------
    # Results and assessments of a collation

    def save_results(self, cid: str, results: PairResults) -> None:
        """Writes a pair's arrays and, beside them, their ``format``: once per pair, the lower manuscript
        first (``documents.ordered``), however the results were read."""
        stored = results.oriented(*ordered(results.a, results.b))
        stamp = np.asarray(STORE_FORMAT, dtype=np.int32)
        self.write_in_collation(cid, f"results/{stored.a}-{stored.b}.npz", npz_bytes(format=stamp, **stored.arrays()))

    def load_results(self, cid: str, a: int, b: int) -> PairResults | None:
        """The results of manuscripts a and b with rows a and columns b (``PairResults.oriented``), or None.

        Raises:
            StoreFormatError: written in a format this release does not read.
        """
        lo, hi = ordered(a, b)
        key = f"{self.collation_prefix(cid)}results/{lo}-{hi}.npz"
        data = self.read(key)
        if data is None:
            return None
        try:
            arrays = np.load(io.BytesIO(data), allow_pickle=False)
            if not isinstance(arrays, np.lib.npyio.NpzFile):
                raise ValueError("an array, not a zip of arrays")
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:  # not a zip, truncated, pickled
            raise StoreFormatError(f"{key}: not a pair's results ({type(exc).__name__}: {exc})", found=None) from exc
        with arrays:
            stamp = arrays["format"] if "format" in arrays.files else None
            if stamp is not None and stamp.shape != ():
                raise StoreFormatError(f"{key}: its format is an array of shape {stamp.shape}", found=None)
            item_format(None if stamp is None else stamp.item(), key)
            missing = {"S", "N_S", "P_S"} - set(arrays.files)
            if missing:
                raise StoreFormatError(f"{key}: a pair's results without {', '.join(sorted(missing))}", found=None)
            stored = PairResults.from_arrays(lo, hi, {name: arrays[name] for name in arrays.files})
        return stored.oriented(a, b)

    def record_deletion(self, cid: str, doc: dict[str, Any]) -> None:
        """Keeps a note that a published collation was deleted (``doc``: its id, when, what it had
        published), for the Change Discovery feed's ``Delete`` activities (``service.activity_feed``)."""
        self.write(f"{DELETIONS}{cid}.json", json_bytes(stamped(doc)))

    def load_deletions(self) -> list[dict[str, Any]]:
        """The notes of ``record_deletion``, by collation id."""
        out = []
        for key in sorted(self.versions(DELETIONS)):
            doc = parse_json(self.read(key))
            if isinstance(doc, dict):
                out.append(unstamped(doc, key))
        return out

    def load_assessments(self, cid: str) -> list[Assessment]:
        """The verdicts, oldest first, each one's format checked (format 1 items have none)."""
        key = f"{self.collation_prefix(cid)}assessments.json"
        items = parse_stored_json(self.read(key), key) or []
        if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
            raise StoreFormatError(f"{key}: not a list of verdicts (JSON objects)", found=None)
        try:
            return [Assessment.from_dict(unstamped(item, f"{key} item {k}")) for k, item in enumerate(items)]
        except (KeyError, TypeError, ValueError) as exc:  # an item without its pair, regions or verdict
            raise StoreFormatError(f"{key}: a verdict without {exc}", found=None) from exc

    def save_assessments(self, cid: str, items: list[Assessment]) -> None:
        """Writes the verdicts, a list as in format 1 (so a format 1 reader reads it), each with its format."""
        self.write_in_collation(cid, "assessments.json", json_bytes([stamped(item.to_dict()) for item in items]))
