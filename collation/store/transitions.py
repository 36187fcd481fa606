"""The status transitions of a collation record, each a read-modify-write under the collation's lock.

```text
queued ──▶ running ──▶ finished
   │          ├──────▶ failed ──(the same request again: reopen)──▶ queued
   └──────────┴──────▶ cancelled (then deleted)
```

A terminal record (finished, failed, cancelled) is never changed by a job again: progress and
failures that arrive late (a job that was still running) are dropped, so the stored JSON always
says how the collation ended. The JSON keeps the status strings of ``CollationStatus``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence

from collation.store.datastore import CollationNotFound, DataStore
from collation.store.records import CollationStatus, is_terminal, now

log = logging.getLogger("collation.store")


def set_progress(
    store: DataStore, cid: str, stage: str, done: int, total: int, status: CollationStatus = CollationStatus.RUNNING
) -> None:
    """Stores the progress of a running collation (no-op once it ended or was deleted)."""

    def change(record: dict) -> None:
        if is_terminal(record["status"]):
            return
        record["status"] = status.value
        record["progress"] = {"stage": stage, "done": int(done), "total": int(total)}
        record["updated"] = now()

    with contextlib.suppress(CollationNotFound):
        store.update_record(cid, change)


def fail(store: DataStore, cid: str, message: str) -> dict | None:
    """Ends a collation as failed with ``message``; returns the record (None if it is gone)."""

    def change(record: dict) -> None:
        if is_terminal(record["status"]):
            return
        record["status"] = CollationStatus.FAILED.value
        record["errors"] = [*record.get("errors", []), {"message": message}]
        record["updated"] = record["ended"] = now()

    try:
        record = store.update_record(cid, change)
    except CollationNotFound:
        return None
    log.warning("Collation %s: failed: %s", cid, message)
    return record


class AlreadyEnded(Exception):
    """The collation ended (or was cancelled) before this transition could be made."""


def finish(store: DataStore, cid: str, usable: Sequence[int]) -> dict:
    """Ends a collation as finished with the manuscripts ``usable`` in its results.

    Raises:
        AlreadyEnded: it was cancelled or failed meanwhile.
        CollationNotFound: it was deleted.
    """

    def change(record: dict) -> None:
        if is_terminal(record["status"]):
            raise AlreadyEnded(cid)
        stamp = now()
        record.update(
            status=CollationStatus.FINISHED.value,
            updated=stamp,
            ended=stamp,
            usable=list(usable),
            progress={"stage": CollationStatus.FINISHED.value, "done": 1, "total": 1},
        )

    return store.update_record(cid, change)


def reopen(store: DataStore, cid: str) -> dict:
    """A failed collation asked for again goes back to queued (its step failures are dropped);
    any other record is returned as it is."""

    def change(record: dict) -> None:
        if record["status"] == CollationStatus.FAILED:
            record.update(
                status=CollationStatus.QUEUED.value,
                errors=[],
                ended=None,
                updated=now(),
                progress={"stage": "queued", "done": 0, "total": 0},
            )

    record = store.update_record(cid, change)
    if record["status"] == CollationStatus.QUEUED:
        store.clear_failures(cid)
    return record


def cancel(store: DataStore, cid: str) -> bool:
    """Marks a collation cancelled, so running jobs stop at their next check; False if it is gone."""
    try:
        store.update_record(cid, lambda r: r.update(status=CollationStatus.CANCELLED.value, updated=now()))
    except CollationNotFound:
        return False
    return True
