"""The data store: a folder that is the system of record of the service.

Redis only holds queues and transient job state. Everything a collation needs to be resumed or
served lives here, written atomically (a temporary file, then ``os.replace``), so a reader never
sees half a file and a killed worker never leaves one behind:

```text
DATA_DIR/
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
└── scores/<key>.npy                   pair score matrices by the two feature keys + similarity + seed + kernel
    scores/<key>.T.npy                 with transpositions: the int8 winners T of the matrix, written before it
    scores/<key>.pairs.npy             candidate pairs (P, 2) of a pruned pair while its matrix is computed
    scores/<key>.c<C>/<k>.npy          chunk results while a matrix is being computed
    scores/<key>.c<C>/<k>.T.npy        with transpositions: the chunk's winners, written before its scores
```

Features and scores are shared by every collation: a collation that adds a third manuscript to
two already compared reuses their features and their pair's scores.

Longer than 400 lines because every path of the data store and every Redis key lives here, in one
place, so that no other module builds a path of its own.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import io
import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image

from ..atomic import atomic_writer, write_bytes, write_json
from ..errors import CollationError
from .steps import Step

if TYPE_CHECKING:
    from ..features import MultiScaleFeatures


class CollationNotFound(CollationError):
    """The collation does not exist (never created, or deleted)."""

    http_status = 404


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


def npz_bytes(**arrays: np.ndarray) -> bytes:
    """Several arrays as the bytes of one .npz file."""
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def json_bytes(obj: Any) -> bytes:
    """``obj`` as the JSON of ``collation.atomic.write_json``."""
    return json.dumps(obj, indent=1, ensure_ascii=False).encode()


def replace_in_folder(path: Path, data: bytes) -> None:
    """Writes ``data`` to ``path`` atomically, in a folder that must exist: unlike ``write_bytes`` it
    never creates folders, so a writer never brings back a collation deleted meanwhile.

    Raises:
        FileNotFoundError: the folder does not exist (any more).
    """
    write_bytes(path, data, create_folders=False)


def transposed_features_key(features_key: str, transpositions: str) -> str:
    """Key of a manuscript's features under every transposition of ``transpositions`` ("mirror",
    "all"): its plain features key plus the option value, since the transposed images are exact
    pixel moves of the same images (docs/transpositions.md)."""
    return f"{features_key}.{transpositions}"


class DataStore:
    """The data store under ``root`` (``COLLATION_DATA_DIR``). Safe to share between processes."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    # ----------------------------------------------------------------------------------------------
    # Collation records

    def collation_dir(self, cid: str) -> Path:
        assert cid.isalnum(), f"bad collation id {cid!r}"
        return self.root / "collations" / cid

    def create_collation(self, record: dict) -> bool:
        """Creates a collation from its first record; False when it already exists (same inputs).

        The folder is built aside with its record and renamed into place, so a collation folder
        never exists without its record (concurrent identical requests all find the record). A
        folder without a record (left by an older version) is moved away and replaced.
        """
        cid = record["id"]
        cdir = self.collation_dir(cid)
        cdir.parent.mkdir(parents=True, exist_ok=True)
        staging = self.root / "staging" / f"{cid}.{uuid.uuid4().hex[:8]}"
        staging.mkdir(parents=True)
        write_json(staging / "record.json", record)
        try:
            for _attempt in range(2):
                try:
                    os.rename(staging, cdir)  # atomic; fails when cdir exists and is not empty
                    return True
                except OSError as exc:
                    if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                        raise
                if (cdir / "record.json").is_file():
                    return False
                self.delete_collation(cid)  # a folder without its record: nobody's collation
            return False
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def exists(self, cid: str) -> bool:
        return (self.collation_dir(cid) / "record.json").is_file()

    def load_record(self, cid: str) -> dict:
        """The collation's record.

        Raises:
            CollationNotFound: unknown or deleted id.
        """
        record = read_json(self.collation_dir(cid) / "record.json")
        if record is None:
            raise CollationNotFound(f"no collation {cid!r}", field="id")
        return record

    @contextlib.contextmanager
    def locked(self, cid: str) -> Iterator[Path]:
        """Holds the collation's lock (an flock, so it works across processes on this machine).

        Raises:
            CollationNotFound: the collation does not exist (or was deleted meanwhile).
        """
        cdir = self.collation_dir(cid)
        try:
            fd = os.open(cdir / ".lock", os.O_CREAT | os.O_RDWR)
        except FileNotFoundError:
            raise CollationNotFound(f"no collation {cid!r}", field="id") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if not (cdir / "record.json").is_file():
                raise CollationNotFound(f"no collation {cid!r}", field="id")
            yield cdir
        finally:
            os.close(fd)

    def update_record(self, cid: str, change: Callable[[dict], Any]) -> dict:
        """Read-modify-write of the record under the collation's lock; returns the new record."""
        with self.locked(cid) as cdir:
            record = read_json(cdir / "record.json")
            if record is None:
                raise CollationNotFound(f"no collation {cid!r}", field="id")
            change(record)
            self.write_in_collation(cid, "record.json", json_bytes(record))
            return record

    def write_in_collation(self, cid: str, relative: str, data: bytes) -> None:
        """Writes a file of a collation atomically (``relative`` to its folder, one sub-folder deep at
        most), creating the sub-folder but never the collation's folder itself.

        Raises:
            CollationNotFound: the collation was deleted (before or during the write).
        """
        cdir = self.collation_dir(cid)
        path = cdir / relative
        try:
            if path.parent != cdir:
                path.parent.mkdir(exist_ok=True)  # no parents: a deleted collation stays deleted
            replace_in_folder(path, data)
        except FileNotFoundError:
            raise CollationNotFound(f"no collation {cid!r} (deleted meanwhile)", field="id") from None

    def list_collations(self) -> list[str]:
        folder = self.root / "collations"
        if not folder.is_dir():
            return []
        return sorted(p.name for p in folder.iterdir() if p.is_dir() and (p / "record.json").is_file())

    def delete_collation(self, cid: str) -> bool:
        """Deletes a collation's folder (not the shared features and scores); False if absent."""
        cdir = self.collation_dir(cid)
        trash = self.root / "trash" / f"{cid}.{uuid.uuid4().hex[:8]}"
        trash.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(cdir, trash)  # atomic: readers see the collation or nothing
        except FileNotFoundError:
            return False
        shutil.rmtree(trash, ignore_errors=True)
        return True

    # ----------------------------------------------------------------------------------------------
    # Manuscripts

    def manuscript_path(self, cid: str, m: int) -> Path:
        return self.collation_dir(cid) / "manuscripts" / f"{m}.json"

    def save_manuscript(self, cid: str, m: int, doc: dict, manifest: dict | None = None) -> None:
        """Writes a prepared manuscript (its manifest first, so the doc's presence means both)."""
        if manifest is not None:
            self.write_in_collation(cid, f"manuscripts/{m}.manifest.json", json_bytes(manifest))
        self.write_in_collation(cid, f"manuscripts/{m}.json", json_bytes(doc))

    def load_manuscript(self, cid: str, m: int) -> dict | None:
        return read_json(self.manuscript_path(cid, m))

    def load_manifest(self, cid: str, m: int) -> dict | None:
        return read_json(self.collation_dir(cid) / "manuscripts" / f"{m}.manifest.json")

    # ----------------------------------------------------------------------------------------------
    # Failures of steps (after retries)

    def failure_path(self, cid: str, step: Step) -> Path:
        return self.collation_dir(cid) / "failures" / f"{step.name}.json"

    def record_failure(self, cid: str, step: Step, message: str) -> None:
        """Records that ``step`` failed for good (no-op when the collation is gone)."""
        with contextlib.suppress(CollationNotFound):
            self.write_in_collation(
                cid, f"failures/{step.name}.json", json_bytes({"step": step.name, "message": message})
            )

    def load_failures(self, cid: str) -> dict[Step, str]:
        """The steps of a collation that failed for good, with their messages."""
        folder = self.collation_dir(cid) / "failures"
        if not folder.is_dir():
            return {}
        out = {}
        for path in sorted(folder.glob("*.json")):
            doc = read_json(path)
            if doc:
                out[Step.parse(doc["step"])] = doc["message"]
        return out

    def clear_failures(self, cid: str) -> None:
        shutil.rmtree(self.collation_dir(cid) / "failures", ignore_errors=True)

    # ----------------------------------------------------------------------------------------------
    # Region images, by content

    def image_path(self, image_digest: str) -> Path:
        return self.root / "images" / image_digest[:2] / f"{image_digest}.png"

    def save_image(self, image: Image.Image, image_digest: str) -> None:
        path = self.image_path(image_digest)
        if path.is_file():
            return
        with atomic_writer(path) as f:
            image.convert("RGB").save(f, format="PNG", compress_level=1)

    def load_image(self, image_digest: str) -> Image.Image:
        with Image.open(self.image_path(image_digest)) as image:
            return image.convert("RGB")

    # ----------------------------------------------------------------------------------------------
    # Features and scores, by content and parameters

    def features_path(self, key: str) -> Path:
        """Where features ``key`` are (or will be); creates nothing, so reading never writes."""
        return self.root / "features" / f"{key}.pt"

    def has_features(self, key: str) -> bool:
        return self.features_path(key).is_file()

    def save_features(self, key: str, features: MultiScaleFeatures) -> None:
        """Writes features atomically (``MultiScaleFeatures.save`` creates the folder)."""
        features.save(self.features_path(key))

    def scores_path(self, key: str) -> Path:
        return self.root / "scores" / f"{key}.npy"

    def has_scores(self, key: str) -> bool:
        return self.scores_path(key).is_file()

    def chunk_path(self, key: str, chunk_pairs: int, k: int) -> Path:
        return self.root / "scores" / f"{key}.c{chunk_pairs}" / f"{k}.npy"

    def has_chunk(self, key: str, chunk_pairs: int, k: int) -> bool:
        return self.chunk_path(key, chunk_pairs, k).is_file()

    def load_scores(self, key: str) -> np.ndarray | None:
        try:
            return np.load(self.scores_path(key), allow_pickle=False)
        except FileNotFoundError:
            return None

    def winners_path(self, key: str) -> Path:
        """The int8 winners T of a pair's matrix scored with transpositions (docs/transpositions.md)."""
        return self.root / "scores" / f"{key}.T.npy"

    def winners_chunk_path(self, key: str, chunk_pairs: int, k: int) -> Path:
        """The winners of chunk ``k``; written before the chunk's scores, so a chunk that is there has them."""
        return self.root / "scores" / f"{key}.c{chunk_pairs}" / f"{k}.T.npy"

    def load_winners(self, key: str) -> np.ndarray | None:
        try:
            return np.load(self.winners_path(key), allow_pickle=False)
        except FileNotFoundError:
            return None

    def pairs_path(self, key: str) -> Path:
        return self.root / "scores" / f"{key}.pairs.npy"

    def save_pairs(self, key: str, pairs: np.ndarray) -> None:
        """Writes the ``(P, 2)`` int64 candidate pairs of a pruned pair, row-major (atomically)."""
        with atomic_writer(self.pairs_path(key)) as f:
            np.save(f, np.ascontiguousarray(pairs, dtype=np.int64))

    def load_pairs(self, key: str, mmap_mode: str | None = None) -> np.ndarray | None:
        try:
            return np.load(self.pairs_path(key), mmap_mode=mmap_mode, allow_pickle=False)
        except FileNotFoundError:
            return None

    def pair_count(self, key: str) -> int | None:
        """How many candidate pairs are stored for ``key`` (None: not computed yet)."""
        pairs = self.load_pairs(key, mmap_mode="r")
        return None if pairs is None else int(pairs.shape[0])

    def drop_chunks(self, key: str, chunk_pairs: int) -> None:
        """Drops a pair's chunks and candidate pairs once its matrix (-inf where unscored) is stored."""
        shutil.rmtree(self.root / "scores" / f"{key}.c{chunk_pairs}", ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            self.pairs_path(key).unlink()

    # ----------------------------------------------------------------------------------------------
    # Results and assessments of a collation

    def results_path(self, cid: str, a: int, b: int) -> Path:
        return self.collation_dir(cid) / "results" / f"{a}-{b}.npz"

    def save_results(self, cid: str, a: int, b: int, **arrays: np.ndarray) -> None:
        self.write_in_collation(cid, f"results/{a}-{b}.npz", npz_bytes(**arrays))

    def load_results(self, cid: str, a: int, b: int) -> dict[str, np.ndarray] | None:
        try:
            with np.load(self.results_path(cid, a, b), allow_pickle=False) as data:
                return {name: data[name] for name in data.files}
        except FileNotFoundError:
            return None

    def load_assessments(self, cid: str) -> list[dict]:
        return read_json(self.collation_dir(cid) / "assessments.json") or []

    def save_assessments(self, cid: str, items: list[dict]) -> None:
        self.write_in_collation(cid, "assessments.json", json_bytes(items))


class RedisKeys:
    """Every Redis key the project writes besides RQ's own, under one prefix (RQ's ``rq:`` style).

    Redis holds only queues and transient job state; losing all of it loses no collation.
    """

    prefix = "collation:"

    @classmethod
    def job_id(cls, cid: str, step_name: str) -> str:
        """The RQ job id of a collation's step: stable, so a step is never enqueued twice at once."""
        return f"{cid}-{step_name}"

    @classmethod
    def jobs(cls, cid: str) -> str:
        """Set of the ids of every job enqueued for a collation (to cancel them)."""
        return f"{cls.prefix}jobs:{cid}"

    @classmethod
    def advance_lock(cls, cid: str) -> str:
        """Lock held while the scheduler decides a collation's next steps."""
        return f"{cls.prefix}advance:{cid}"

    @classmethod
    def store_problem(cls) -> str:
        """Why the data store cannot be written, while it cannot (``store.writable``)."""
        return f"{cls.prefix}store-problem"

    @classmethod
    def request_lock(cls, cid: str) -> str:
        """Lock held by the API's POST and DELETE of a collation, so that the two never interleave."""
        return f"{cls.prefix}request:{cid}"

    @classmethod
    def suspect(cls, job_id: str) -> str:
        """When a job that claims to be live was first seen stuck."""
        return f"{cls.prefix}suspect:{job_id}"
