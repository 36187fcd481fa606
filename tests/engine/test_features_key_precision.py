"""The backbone's precision in the features key, the service's features step computing in the precision
recorded at prepare, and the stored images decoded once each. CPU flags are injected: nothing here
depends on this machine's CPU."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import torch
from builders import v3_canvas, v3_image_body, v3_manifest
from synthetic import drawing

from collation.core.errors import OptionError
from collation.core.options import PRECISIONS, CollationOptions
from collation.core.settings import Settings, SettingsError
from collation.engine.backbones import load_backbone, resolve_precision
from collation.engine.feature_keys import features_key
from collation.engine.features import extract_features
from collation.engine.pipeline import describe
from collation.iiif.manifests import parse_manifest
from collation.iiif.regions import Region
from collation.iiif.sources import ManuscriptRegions
from collation.jobs import steps
from collation.jobs.manuscripts import StoredImages
from collation.jobs.runtime import Runtime
from collation.store.folder import FolderStore
from collation.store.records import CollationRequest, new_record

ZEN3_FLAGS = frozenset({"fpu", "avx2", "avx512f"})  # AVX-512 without bfloat16: float32
SAPPHIRE_FLAGS = ZEN3_FLAGS | {"avx512_bf16", "amx_bf16"}  # native bfloat16
CID = "00000000000000aa"
SIZES = [(320, 256), (256, 320), (200, 200), (400, 120), (96, 300), (333, 251)]
"""Varied shapes: landscape, portrait, square, a strip either way, an odd size."""


# -- the key --------------------------------------------------------------------------------------


@pytest.mark.parametrize("similarity", ["s_trans", "s_features"])
def test_the_key_differs_by_precision(similarity: str) -> None:
    options = CollationOptions(similarity=similarity)
    exact = features_key(["d0", "d1"], options, precision="float32")
    assert exact != features_key(["d0", "d1"], options, precision="bfloat16")
    assert exact == features_key(["d0", "d1"], options, precision="float32")  # a key, not a draw


def test_a_key_names_a_resolved_precision_never_auto() -> None:
    with pytest.raises(OptionError) as e:
        features_key(["d0"], CollationOptions(), precision="auto")
    assert e.value.field == "precision"


@pytest.mark.parametrize(
    ("precision", "device", "flags", "cuda_bf16", "expected"),
    [
        ("auto", "cpu", ZEN3_FLAGS, None, "float32"),
        ("auto", "cpu", SAPPHIRE_FLAGS, None, "bfloat16"),
        ("auto", "cpu", frozenset(), None, "float32"),
        ("float32", "cpu", SAPPHIRE_FLAGS, None, "float32"),
        ("bfloat16", "cpu", ZEN3_FLAGS, None, "bfloat16"),  # forced: emulated, still what the key says
        ("auto", "cuda", (), True, "bfloat16"),
        ("auto", "cuda:3", (), False, "float32"),  # a GPU this machine may lack is named, not asked for
        ("bfloat16", "cuda:3", (), False, "bfloat16"),
    ],
)
def test_the_setting_resolves_by_the_backbone_s_rule(precision, device, flags, cuda_bf16, expected) -> None:
    assert resolve_precision(precision, device, cpu_flags=flags, cuda_bf16=cuda_bf16) == expected


def test_a_bad_setting_value_is_an_error_naming_the_setting() -> None:
    with pytest.raises(SettingsError) as e:
        Settings.from_env({"COLLATION_FEATURE_PRECISION": "float16"})
    assert "COLLATION_FEATURE_PRECISION" in e.value.message and "'float16'" in e.value.message
    assert e.value.field == "COLLATION_FEATURE_PRECISION"
    for value in PRECISIONS:  # the settings accept what the backbone accepts, and nothing else
        assert Settings.from_env({"COLLATION_FEATURE_PRECISION": value}).feature_precision == value


def test_a_runtime_resolves_its_precision_from_its_cpu_flags(tmp_path: Path) -> None:
    settings = Settings.from_env({}, data_dir=tmp_path, device="cpu")
    assert Runtime.create(settings, cpu_flags=ZEN3_FLAGS).precision == "float32"
    assert Runtime.create(settings, cpu_flags=SAPPHIRE_FLAGS).precision == "bfloat16"
    forced = settings.replace(feature_precision="float32")
    assert Runtime.create(forced, cpu_flags=SAPPHIRE_FLAGS).precision == "float32"
    # An io worker whose settings name the compute workers' GPU resolves without one (the prepare step).
    gpu = settings.replace(device="cuda:3", feature_precision="bfloat16")
    assert Runtime.create(gpu, cpu_flags=ZEN3_FLAGS).precision == "bfloat16"


# -- prepare records the precision, the features step honours it ----------------------------------


def _prepare(runtime: Runtime, monkeypatch: pytest.MonkeyPatch, images: list[Any]) -> dict[str, Any]:
    """Runs the prepare step of manuscript 0 on ``runtime`` with these region images (no fetching)."""
    import collation.iiif.sources

    canvases = [
        v3_canvas(f"http://lib.test/canvas/{k}", (1000, 800), body=v3_image_body(f"http://img.test/{k}.jpg"))
        for k in range(len(images))
    ]
    parsed = parse_manifest(v3_manifest("http://lib.test/manifest", canvases, "Codex A"))
    regions = [Region(k, f"http://lib.test/canvas/{k}", k, (0, 0, 320, 256), "") for k in range(len(images))]
    found = ManuscriptRegions(parsed, regions, images, [])
    monkeypatch.setattr(collation.iiif.sources, "load_manuscript_regions", lambda *a, **k: found)
    request = CollationRequest(("http://lib.test/manifest", "http://lib.test/other"))
    assert runtime.store.create_collation(new_record(CID, request, CollationOptions(), runtime.settings))
    steps.prepare_manuscript(runtime, CID, 0)
    return runtime.store.load_manuscript(CID, 0)


def test_a_features_job_honours_the_precision_recorded_at_prepare(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An io worker with native bfloat16 prepares; a compute worker without it describes: in bfloat16,
    under the key that says so, the features equal those of a bfloat16 backbone and not a float32 one."""
    images = [drawing(k, size) for k, size in enumerate(SIZES[:2])]
    settings = Settings.from_env({}, data_dir=tmp_path, device="cpu", backbone="efficientnet-lite0")
    io_worker = Runtime.create(settings, cpu_flags=SAPPHIRE_FLAGS)
    doc = _prepare(io_worker, monkeypatch, images)
    assert doc.precision == "bfloat16"
    assert doc.features_key == features_key(doc.digests, CollationOptions(), precision="bfloat16")

    compute_worker = Runtime.create(settings, cpu_flags=ZEN3_FLAGS)
    assert compute_worker.precision == "float32"
    assert steps.compute_features(compute_worker, CID, 0) == "2 regions described"
    assert [key[2] for key in compute_worker._backbones] == ["bfloat16"]
    assert compute_worker._backbones[("efficientnet-lite0", "cpu", "bfloat16")].compute_dtype == torch.bfloat16
    stored = compute_worker.store.load_features(doc.features_key)
    reduced = describe(images, load_backbone(device="cpu", precision="bfloat16"), CollationOptions())
    exact = describe(images, load_backbone(device="cpu", precision="float32"), CollationOptions())
    assert torch.equal(stored.desc, reduced.desc)
    assert (stored.desc - exact.desc).abs().max() > 1e-3  # the precision mattered: another key, other features


def test_a_manuscript_prepared_by_an_older_release_keeps_its_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A document without a precision (and a key that names none) is described as before, with the
    worker's own precision; no new key is ever that old key, so new collations never reuse it."""
    images = [drawing(0, (160, 128))]
    settings = Settings.from_env({}, data_dir=tmp_path, device="cpu", backbone="efficientnet-lite0")
    worker = Runtime.create(settings, cpu_flags=ZEN3_FLAGS)
    doc = _prepare(worker, monkeypatch, images)
    old = doc.replace(precision=None, features_key="0" * 32)
    worker.store.forget_manuscript(CID, 0)
    worker.store.save_manuscript(CID, old)
    assert steps.compute_features(worker, CID, 0) == "1 regions described"
    assert [key[2] for key in worker._backbones] == ["float32"] and worker.store.has_features("0" * 32)
    assert "0" * 32 not in {features_key(doc.digests, CollationOptions(), precision=p) for p in ("float32", "bfloat16")}


# -- the stored images, decoded once --------------------------------------------------------------


class CountingStore:
    """A folder store whose image reads are counted, and slow (so two threads overlap)."""

    def __init__(self, root: Path, delay: float = 0.0) -> None:
        self.folder, self.delay, self.loads = FolderStore(root), delay, 0
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.folder, name)

    def load_image(self, digest: str) -> Any:
        with self._lock:
            self.loads += 1
        time.sleep(self.delay)
        return self.folder.load_image(digest)


def _stored(root: Path, images: list[Any], delay: float = 0.0) -> tuple[CountingStore, list[str]]:
    from collation.engine.illustrations import image_digest

    store = CountingStore(root, delay)
    digests = [image_digest(image) for image in images]
    for image, digest in zip(images, digests, strict=True):
        store.folder.save_image(image, digest)
    return store, digests


@pytest.mark.parametrize("workers", [1, 2])
def test_the_features_step_decodes_each_stored_image_once_and_gives_the_same_features(
    tmp_path: Path, backbone: Any, workers: int
) -> None:
    images = [drawing(k, size) for k, size in enumerate(SIZES)]
    store, digests = _stored(tmp_path, images)
    lazy = StoredImages(store, digests, keep=3)  # fewer than the images: the order must do it
    got = extract_features(lazy, backbone, batch_size=1, workers=workers)  # a CPU's batches, all 5 scales
    assert store.loads == lazy.decodes == len(images)  # was 6 per image: the sizes, then once per scale
    assert len(lazy._recent) <= lazy.keep
    decoded = [store.folder.load_image(d) for d in digests]
    expected = extract_features(decoded, backbone, batch_size=1, workers=workers)
    for name in ("desc", "pos", "mask"):
        assert torch.equal(getattr(got, name), getattr(expected, name)), name


def test_sizes_come_from_the_headers_without_decoding(tmp_path: Path) -> None:
    images = [drawing(k, size) for k, size in enumerate(SIZES)]
    store, digests = _stored(tmp_path, images)
    assert StoredImages(store, digests).sizes() == SIZES and store.loads == 0


def test_the_kept_images_are_bounded(tmp_path: Path) -> None:
    images = [drawing(k, (64, 48)) for k in range(6)]
    store, digests = _stored(tmp_path, images)
    lazy = StoredImages(store, digests, keep=2)
    assert [lazy[k].size for k in range(6)] == [(64, 48)] * 6
    assert len(lazy._recent) == 2 and lazy.decodes == 6
    lazy[5], lazy[4]  # kept
    assert lazy.decodes == 6
    lazy[0]  # long gone: read again
    assert lazy.decodes == 7 and list(lazy._recent) == [digests[4], digests[0]]


def test_an_image_two_threads_ask_for_at_once_is_decoded_once(tmp_path: Path) -> None:
    store, digests = _stored(tmp_path, [drawing(0, (64, 48))], delay=0.2)
    lazy = StoredImages(store, digests)
    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(lambda _: lazy[0], range(8)))
    assert store.loads == 1 and all(image is got[0] for image in got)


def test_a_failed_read_is_not_kept(tmp_path: Path) -> None:
    store, digests = _stored(tmp_path, [drawing(0, (64, 48))])
    lazy = StoredImages(store, ["f" * 64, *digests])
    for _ in range(2):
        with pytest.raises(FileNotFoundError):
            lazy[0]
    assert lazy.decodes == 2 and lazy[1].size == (64, 48)
