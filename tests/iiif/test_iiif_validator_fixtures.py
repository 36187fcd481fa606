"""The IIIF community validator's own fixtures (valid 3.0 documents, deliberately broken ones and
2.x spec fixtures) are read or refused cleanly; region finding on them never crashes and never
reaches the network (every host resolves, in this test, to a private address and is refused)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from iiif_helpers import validator_root

from collation.core.errors import CollationError, ManifestError
from collation.iiif.manifests import load_manifest
from collation.iiif.regions import find_regions
from collation.net.http import Fetcher

FIXTURES = validator_root() / "fixtures"
FILES = sorted(FIXTURES.glob("*/*.json")) if FIXTURES.is_dir() else []

READ = {  # fixture -> (version, canvases, canvases with an image)
    "2/manifest-1.json": (2, 1, 1),
    "2/manifest-2.json": (2, 1, 1),
    "3/full_example.json": (3, 2, 2),
    "3/version2image.json": (3, 1, 1),
    "3/range_range.json": (3, 2, 2),
    "3/broken_service.json": (3, 1, 1),
    "3/simple_video.json": (3, 1, 0),
    "3/choice.json": (3, 1, 0),  # a Choice of two videos: no image
}
REFUSED = {
    "3/collection.json": "is a IIIF Collection 'Collection for Example Organization'",
    "3/broken_collection.json": "is a IIIF Collection",
    "3/collection_of_collections.json": "is a IIIF Collection",
    "3/annoPage.json": "of type AnnotationPage, not a IIIF Manifest",
    "3/content_state.json": "of type Annotation, not a IIIF Manifest",
    "3/broken_simple_image.json": "has no usable canvases",
    "3/old_format_label.json": "has no canvases",
}


def private_everywhere(host: str, port: int, **_: Any) -> list[Any]:
    return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.9.9.9", port))]


@pytest.fixture(scope="module")
def offline() -> Fetcher:
    return Fetcher(resolve=private_everywhere)


def _name(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def test_fixtures_present() -> None:
    if not FILES:
        pytest.skip(f"IIIF validator fixtures not found at {FIXTURES} (set COLLATION_IIIF_VALIDATOR)")
    assert set(READ) | set(REFUSED) <= {_name(p) for p in FILES}


@pytest.mark.parametrize("path", FILES, ids=[_name(p) for p in FILES])
def test_fixture_is_read_or_refused_cleanly(path: Path, offline: Fetcher) -> None:
    name = _name(path)
    try:
        manifest = load_manifest(str(path))
    except CollationError as error:
        assert name not in READ, f"{name} should be read: {error.message}"
        assert str(path.resolve()) in error.message  # the loader names the file it really read
        if name in REFUSED:
            assert isinstance(error, ManifestError) and REFUSED[name] in error.message
        return
    assert name not in REFUSED, f"{name} should be refused"
    if name in READ:
        version, canvases, images = READ[name]
        assert manifest.version == version and len(manifest.canvases) == canvases
        assert sum(c.image is not None for c in manifest.canvases) == images
    regions, problems = find_regions(manifest, fetcher=offline)
    for problem in problems:  # referenced pages on example.org are refused, not fetched
        assert any(
            reason in problem.message
            for reason in ("refused", "not a canvas", "empty region", "not used", "paints no image", "no region")
        ), problem.message
    for region in regions:
        canvas = manifest.canvas(region.canvas_id)
        assert canvas is not None and all(isinstance(v, int) for v in region.xywh)
