"""Reading one manuscript for a collation: manifest, regions, region images (the io queue's work).

The manifest-to-regions path is ``collation.iiif.load_manuscript_regions``, the same one the command
line uses; this module turns the request's regions entry into its arguments and its result into
the manuscript document of the store. Everything that can go wrong with a library's documents is
recorded as an error of the manuscript (or of one canvas or region) rather than raised, so the
collation goes on with what could be read.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from PIL import Image

from collation.core.errors import CollationError
from collation.core.options import CollationOptions
from collation.store.datastore import DataStore
from collation.store.records import CollationRecord
from collation.store.stored import PreparedManuscript, StoredRegion

if TYPE_CHECKING:
    from collation.iiif.regions import RegionProblem
    from collation.iiif.sources import ManuscriptRegions
    from collation.net.http import Fetcher

FETCH_THREADS = 4
"""Region images fetched at once; the Fetcher also caps requests per host."""


def region_arguments(spec: Any) -> dict[str, Any]:
    """``load_manuscript_regions`` arguments from the request's regions entry of one manuscript.

    The entry is a list of ``{"canvas": id or index, "xywh": [x, y, w, h], "label"}`` (regions
    given by the user), ``{"selector": "motivation=tagging,tag=illustration"}`` (which annotations
    of the manifest are illustrations), ``{"whole_canvases": true}``, ``{"detect": true}``
    (illustrations found by the detector, even when annotations exist; ``false``: never), or absent
    (every non-painting annotation with a region; detected when the manifest has none).
    """
    from collation.iiif.regions import RegionSelector

    if spec is None:
        return {}
    if isinstance(spec, list):
        return {"given": spec}
    arguments: dict[str, Any] = {}
    if spec.get("selector"):
        arguments["selector"] = RegionSelector.parse(spec["selector"])
    if spec.get("whole_canvases"):
        arguments["whole_canvases"] = True
    if spec.get("detect") is not None:
        arguments["detect"] = bool(spec["detect"])
    return arguments


class RuntimeDetector:
    """The detector of a runtime (``Runtime.detector``: loaded once per process, on the first canvas
    that needs it, so manuscripts with annotations never load a model): ``runtime``'s (the API's, for
    the inspection), else the job's; the built-in one outside a worker. The job's runtime is taken when
    this is made, in the job's thread: detection runs in a thread pool, where the current runtime (a
    context variable) is not set."""

    name = "runtime"

    def __init__(self, runtime: Any = None) -> None:
        from collation.jobs.runtime import current

        if runtime is None:
            try:
                runtime = current()
            except RuntimeError:  # no runtime is active (a test calling read_manuscript directly)
                runtime = None
        self.runtime: Any = runtime

    def __call__(self, image: Any) -> list[Any]:
        from collation.engine.detection import load_detector

        detector = self.runtime.detector if self.runtime is not None else load_detector()
        return detector(image)


def problem_error(problem: RegionProblem) -> dict[str, Any]:
    """A manuscript error (``{"message", "canvas"?, "region"?}``) from a problem of the IIIF layer."""
    error: dict[str, Any] = {"message": problem.message}
    if problem.canvas_id:
        error["canvas"] = problem.canvas_id
    if problem.region is not None:
        error["region"] = problem.region
    return error


def read_manuscript(
    record: CollationRecord,
    m: int,
    store: DataStore,
    fetcher: Fetcher,
    max_regions: int = 5000,
    detector: Any = None,
    precision: str = "float32",
    on_regions: Callable[[Sequence[Any]], None] | None = None,
) -> tuple[PreparedManuscript, dict | None]:
    """Reads manuscript ``m`` of a collation and stores its region images (``on_regions``: called with
    the regions found before their images are fetched; what it raises stops the read).

    Returns:
        (doc, manifest JSON or None): the regions whose image could be read, and ``precision``, the
        backbone's arithmetic (``float32`` or ``bfloat16``, ``Runtime.precision``) that the features key
        names and the features step computes in. ``detector``: default the worker's (``RuntimeDetector``).
    """
    from collation.iiif.sources import load_manuscript_regions

    url = record.request.manifests[m]
    spec = record.request.regions.get(str(m))
    doc = PreparedManuscript(index=m, manifest=url)
    try:
        found = load_manuscript_regions(
            url,
            fetcher=fetcher,
            max_regions=max_regions,
            workers=FETCH_THREADS,
            strict=False,
            require_regions=False,
            detector=detector or RuntimeDetector(),
            on_regions=on_regions,
            **region_arguments(spec),
        )
    except CollationError as exc:  # the manifest (or its region annotations) could not be read
        return doc.replace(errors=({"message": exc.message},)), None
    return _document(doc, found, store, record.options, precision), found.manifest.raw


def _document(
    doc: PreparedManuscript,
    found: ManuscriptRegions,
    store: DataStore,
    options: CollationOptions,
    precision: str = "float32",
) -> PreparedManuscript:
    """Fills ``doc`` from what was read, storing each region image by its content digest; a region with
    nothing drawn is marked ``"blank": true`` (``collation.engine.weak.is_blank``: its matches are weak)."""
    from collation.engine.feature_keys import features_key
    from collation.engine.illustrations import image_digest
    from collation.engine.weak import is_blank

    manifest = found.manifest
    doc = doc.replace(
        manifest_id=manifest.id,
        label=manifest.label,
        version=manifest.version,
        regions_source=found.source,
        regions_note=found.note,
        errors=doc.errors + tuple(problem_error(problem) for problem in found.problems),
    )

    def save(image: Image.Image) -> str:
        key = image_digest(image)
        store.save_image(image, key)
        return key

    # hashing and PNG-encoding release the GIL: the region images are stored side by side, in order
    with ThreadPoolExecutor(max_workers=FETCH_THREADS, thread_name_prefix="store-images") as pool:
        digests = list(pool.map(save, found.images))
    kept = tuple(
        StoredRegion.from_dict({**region.to_dict(), "digest": key, "blank": is_blank(image)})
        for region, key, image in zip(found.regions, digests, found.images, strict=True)
    )
    if not kept:
        return doc
    return doc.replace(
        regions=kept, features_key=features_key(digests, options, precision=precision), precision=precision
    )


RECENT_IMAGES = 8
"""Decoded images a ``StoredImages`` keeps: the features step asks for each image once per scale, one
scale after another (image-major), with a few forward passes side by side (``extract_features``)."""


class StoredImages(Sequence[Image.Image]):
    """A manuscript's region images, each read from the store when asked for, the last ``keep`` kept
    decoded: the features step holds a few images, never all of them (5,000 regions of 352 px are 1.8 GB),
    and decodes each once (it asks for each image's scales one after another).

    Thread-safe: the features step's workers ask side by side, and an image two of them ask for at once
    is decoded once (the second waits for the first). ``decodes`` counts the images read and decoded.
    """

    def __init__(self, store: DataStore, digests: Sequence[str], keep: int = RECENT_IMAGES) -> None:
        self.store, self.digests, self.keep = store, list(digests), keep
        self.decodes = 0
        self._recent: OrderedDict[str, Future[Image.Image]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.digests)

    def __getitem__(self, index: int | slice) -> Image.Image | list[Image.Image]:  # type: ignore[override]
        if isinstance(index, slice):
            return [self._image(d) for d in self.digests[index]]
        return self._image(self.digests[index])

    def sizes(self) -> list[tuple[int, int]]:
        """(width, height) of every image, read from the files' headers: nothing is decoded
        (``collation.engine.features.image_sizes``)."""
        sizes = []
        for digest in self.digests:
            path = self.store.local_file(self.store.image_key(digest))
            if path is None:
                raise FileNotFoundError(f"no region image {digest} in {self.store.description}")
            with Image.open(path) as image:
                sizes.append(image.size)
        return sizes

    def _image(self, digest: str) -> Image.Image:
        """The decoded image ``digest``: a kept one, one another thread is decoding, or read now."""
        with self._lock:
            pending = self._recent.get(digest)
            reader = pending is None
            if reader:
                pending = self._recent[digest] = Future()
                self.decodes += 1
                while len(self._recent) > self.keep:  # a waiter still holds the future it waits on
                    self._recent.popitem(last=False)
            else:
                self._recent.move_to_end(digest)
        if reader:
            try:
                pending.set_result(self.store.load_image(digest))
            except BaseException as exc:  # the waiters get the error too; the next ask reads again
                pending.set_exception(exc)
                with self._lock:
                    if self._recent.get(digest) is pending:
                        del self._recent[digest]
        return pending.result()
