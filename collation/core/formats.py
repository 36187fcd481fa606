"""The format of what the data store keeps: the number each object is written with, checked when read.

Every object the service writes carries the format it was written in (docs/operations.md, "Upgrading"):
a ``"format"`` key in JSON objects (records, prepared manuscripts, failures, each verdict), a
``format`` array in a pair's results (``.npz``) and a ``"format"`` entry in features files. Arrays
(``.npy``: score matrices, winners, chunks, candidate pairs) have no room for one: their format is in
their key (``collation.store.records.pair_key``'s ``"v"``), so a release only ever finds the arrays it
computes. The store itself says which format all of its objects are readable in (``format.json``,
``collation.store.formats``).

Format 1 is the store written before formats had numbers: an object without a number is format 1.
Format 2 adds the numbers and nothing else, so a release that reads format 1 reads format 2 too: old
and new processes can run side by side during an upgrade.
"""

from __future__ import annotations

from collation import __version__
from collation.core.errors import StoreFormatError

STORE_FORMAT = 2
"""The format this release writes."""
OLDEST_READABLE = 1
"""The oldest format this release reads (older objects need ``collate store migrate`` of an older release)."""
UNVERSIONED = 1
"""The format of an object written without a number (before format 2)."""


def item_format(found: object, where: str) -> int:
    """The format of an object as read back (``found``: its number, None when it has none), checked.

    Raises:
        StoreFormatError: naming ``where`` (the object's key), when this release cannot read it.
    """
    if found is None:
        return UNVERSIONED
    if isinstance(found, bool) or not isinstance(found, int):
        raise StoreFormatError(f"{where}: format {found!r} is not a format number", found=found)
    if found > STORE_FORMAT:
        raise StoreFormatError(
            f"{where} is in data store format {found}, written by a newer release; image-collation "
            f"{__version__} reads formats {OLDEST_READABLE} to {STORE_FORMAT}: upgrade this process to the "
            "release that wrote it (`collate store check` lists the store's formats)",
            found=found,
        )
    if found < OLDEST_READABLE:
        raise StoreFormatError(
            f"{where} is in data store format {found}, older than image-collation {__version__} reads "
            f"({OLDEST_READABLE} to {STORE_FORMAT}): run `collate store migrate` with an earlier release first",
            found=found,
        )
    return found
