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

from collation.core.vocabulary import CollationStatus
from collation.store.datastore import CollationNotFound, DataStore
from collation.store.records import CollationRecord, Progress, now

log = logging.getLogger("collation.store")


def set_progress(
    store: DataStore, cid: str, stage: str, done: int, total: int, status: CollationStatus = CollationStatus.RUNNING
) -> None:
    """Stores the progress of a running collation (no-op once it ended or was deleted)."""

    def change(record: CollationRecord) -> None:
        if record.terminal:
            return
        record.status = status
        record.progress = Progress(stage, int(done), int(total))
        record.updated = now()

    with contextlib.suppress(CollationNotFound):
        store.update_record(cid, change)


def fail(store: DataStore, cid: str, message: str) -> CollationRecord | None:
    """Ends a collation as failed with ``message``; returns the record (None if it is gone)."""

    def change(record: CollationRecord) -> None:
        if record.terminal:
            return
        record.status = CollationStatus.FAILED
        record.errors = [*record.errors, {"message": message}]
        record.updated = record.ended = now()

    try:
        record = store.update_record(cid, change)
    except CollationNotFound:
        return None
    log.warning("Collation %s: failed: %s", cid, message)
    return record


class AlreadyEnded(Exception):
    """The collation ended (or was cancelled) before this transition could be made."""


def finish(store: DataStore, cid: str, usable: Sequence[int]) -> CollationRecord:
    """Ends a collation as finished with the manuscripts ``usable`` in its results.

    Raises:
        AlreadyEnded: it was cancelled or failed meanwhile.
        CollationNotFound: it was deleted.
    """

    def change(record: CollationRecord) -> None:
        if record.terminal:
            raise AlreadyEnded(cid)
        record.status = CollationStatus.FINISHED
        record.updated = record.ended = now()
        record.usable = list(usable)
        record.progress = Progress(CollationStatus.FINISHED.value, 1, 1)

    return store.update_record(cid, change)


def reopen(store: DataStore, cid: str) -> CollationRecord:
    """A failed collation asked for again (the same request, or ``POST /collations/{id}/retry``) goes
    back to queued: its step failures are dropped and so are its manuscripts that gave no region
    (their manifest unreadable, say), so that they are read again; features and scores stay cached by
    content. Any other record is returned as it is."""
    reopened = []

    def change(record: CollationRecord) -> None:
        if record.status == CollationStatus.FAILED:
            record.status = CollationStatus.QUEUED
            record.errors, record.ended, record.updated = [], None, now()
            record.progress = Progress("queued")
            reopened.append(record.manuscript_count)

    record = store.update_record(cid, change)
    if reopened:
        store.clear_failures(cid)
        for m in range(reopened[0]):
            doc = store.load_manuscript(cid, m)
            if doc is not None and not doc.usable:  # no region: no pair's results depend on it
                store.forget_manuscript(cid, m)
    return record


def name_by_labels(store: DataStore, cid: str, labels: list[str | None]) -> None:
    """Gives an unnamed collation its default name (``default_name``) once every manuscript is read:
    ``labels`` has one entry per manuscript, None for one not read yet (then nothing changes)."""
    if any(label is None for label in labels):
        return

    def change(record: CollationRecord) -> None:
        record.name = record.display_name(labels)  # a name given meanwhile stays

    with contextlib.suppress(CollationNotFound):  # deleted meanwhile: the step stops at its next check
        store.update_record(cid, change)


def _cancelled(record: CollationRecord) -> None:
    record.status, record.updated = CollationStatus.CANCELLED, now()


def cancel(store: DataStore, cid: str) -> bool:
    """Marks a collation cancelled, so running jobs stop at their next check; False if it is gone."""
    try:
        store.update_record(cid, _cancelled)
    except CollationNotFound:
        return False
    return True
