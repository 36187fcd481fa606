"""The data store in a folder of one disk (``COLLATION_DATA_DIR``): the default, for one machine or
for machines that share a file system.

Every object is a file ``<root>/<key>``, written to a temporary file beside it and renamed into
place (``collation.core.atomic``). A collation is a folder: it is created by renaming a staging folder
that already holds its record (so it never exists without one), deleted by renaming it into
``trash/`` (readers see all of it or nothing), written into only while its folder exists (so a slow
writer never brings a deleted collation back), and locked with an ``flock`` on ``.lock``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING

from collation.core.atomic import atomic_writer, write_bytes, write_json
from collation.store.datastore import CollationNotFound, DataStore
from collation.store.metering import measure, metered
from collation.store.records import CollationRecord

if TYPE_CHECKING:
    from collation.core.metrics import Metrics


class FolderStore(DataStore):
    """The data store under ``root``. Safe to share between processes of one machine (or of machines
    sharing the file system, when it supports ``flock``). With ``metrics``, each operation that touches
    the disk is counted (``collation.store.metering``)."""

    backend = "folder"

    def __init__(self, root: str | Path, metrics: Metrics | None = None, min_free: int = 0) -> None:
        self.root = Path(root)
        self.description = f"folder {self.root}"
        self.metrics = metrics
        self.min_free = min_free

    def free_bytes(self) -> int | None:
        """Bytes free on the disk of ``root`` (its nearest existing folder: a new store has none yet)."""
        folder = self.root
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        return shutil.disk_usage(folder).free

    def path(self, key: str) -> Path:
        return self.root / key

    # ----------------------------------------------------------------------------------------------
    # Primitives

    @metered("read")
    def read(self, key: str) -> bytes | None:
        try:
            return self.path(key).read_bytes()
        except FileNotFoundError:
            return None

    @metered("write")
    def write(self, key: str, data: bytes) -> None:
        write_bytes(self.path(key), data)

    @contextlib.contextmanager
    def writer(self, key: str) -> Iterator[IO[bytes]]:
        with measure(self.metrics, self.backend, "writer"), atomic_writer(self.path(key)) as f:
            yield f

    @metered("create_once")
    def create_once(self, key: str, data: bytes) -> bool:
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        staged = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
        write_bytes(staged, data)
        try:
            os.link(staged, path)  # atomic, and fails when the target exists
            return True
        except FileExistsError:
            return False
        finally:
            staged.unlink()

    @metered("has")
    def has(self, key: str) -> bool:
        return self.path(key).is_file()

    @metered("delete")
    def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path(key).unlink()

    @metered("delete_prefix")
    def delete_prefix(self, prefix: str) -> None:
        if prefix.endswith("/"):
            shutil.rmtree(self.path(prefix), ignore_errors=True)
            return
        folder, start = self.path(prefix).parent, Path(prefix).name
        for path in folder.glob(f"{start}*") if folder.is_dir() else ():
            shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)

    @metered("versions")
    def versions(self, prefix: str) -> dict[str, str]:
        folder = self.path(prefix)
        if not folder.is_dir():
            return {}
        out = {}
        for dirpath, _dirs, files in os.walk(folder):
            for name in files:
                if name.startswith("."):  # temporary files, the lock
                    continue
                path = Path(dirpath) / name
                with contextlib.suppress(FileNotFoundError):
                    out[path.relative_to(self.root).as_posix()] = str(path.stat().st_mtime_ns)
        return out

    @metered("local_file")
    def local_file(self, key: str) -> Path | None:
        path = self.path(key)
        return path if path.is_file() else None

    # ----------------------------------------------------------------------------------------------
    # Collations

    def collation_dir(self, cid: str) -> Path:
        return self.path(self.collation_prefix(cid))

    @metered("create_collation")
    def create_collation(self, record: CollationRecord) -> bool:
        """The folder is built aside with its record and renamed into place, so concurrent identical
        requests all find the record. A folder without a record (left by an older version) is moved
        away and replaced."""
        cid = record.id
        cdir = self.collation_dir(cid)
        cdir.parent.mkdir(parents=True, exist_ok=True)
        staging = self.root / "staging" / f"{cid}.{uuid.uuid4().hex[:8]}"
        staging.mkdir(parents=True)
        write_json(staging / "record.json", record.to_json())
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

    @contextlib.contextmanager
    def locked(self, cid: str) -> Iterator[None]:
        cdir = self.collation_dir(cid)
        try:
            fd = os.open(cdir / ".lock", os.O_CREAT | os.O_RDWR)
        except FileNotFoundError:
            raise CollationNotFound(f"no collation {cid!r}", field="id") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if not (cdir / "record.json").is_file():
                raise CollationNotFound(f"no collation {cid!r}", field="id")
            yield
        finally:
            os.close(fd)

    @metered("write_in_collation")
    def write_in_collation(self, cid: str, relative: str, data: bytes) -> None:
        cdir = self.collation_dir(cid)
        path = cdir / relative
        try:
            if path.parent != cdir:
                path.parent.mkdir(exist_ok=True)  # no parents: a deleted collation stays deleted
            write_bytes(path, data, create_folders=False)
        except FileNotFoundError:
            raise CollationNotFound(f"no collation {cid!r} (deleted meanwhile)", field="id") from None

    @metered("delete_collation")
    def delete_collation(self, cid: str) -> bool:
        cdir = self.collation_dir(cid)
        trash = self.root / "trash" / f"{cid}.{uuid.uuid4().hex[:8]}"
        trash.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(cdir, trash)  # atomic: readers see the collation or nothing
        except FileNotFoundError:
            return False
        shutil.rmtree(trash, ignore_errors=True)
        return True
