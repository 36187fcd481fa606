"""Fetching region pixels in the cases iipsrv does not cover: level-0 tile sets and static sizes
(no region requests), an Image API 3 service, static images, failing services and fallbacks.
Images here are synthetic, made by the tests."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from builders import v2_canvas, v2_manifest, v3_canvas, v3_image_body, v3_manifest
from iiif_helpers import image_api3_route, mean_abs_diff
from PIL import Image

from collation.core.errors import FetchError
from collation.iiif.fetch import fetch_region, target_size
from collation.iiif.info import parse_info
from collation.iiif.manifests import parse_manifest
from collation.iiif.regions import Region

SIZE = (800, 1000)
BOX = (150, 220, 600, 500)  # image pixels; long side 600 > 352, so the fetch scales down


@pytest.fixture(scope="module")
def synthetic(static_server: Any) -> Path:
    """A structured 800×1000 test image (smooth colour blobs plus edges), saved under the server."""
    rng = np.random.default_rng(7)
    noise = Image.fromarray(rng.integers(0, 255, (25, 20, 3), dtype=np.uint8)).resize(SIZE, Image.Resampling.BICUBIC)
    array = np.asarray(noise).copy()
    array[::50, :, :] = 0
    array[:, ::40, 1] = 255
    path = static_server.root / "synthetic" / "folio.jpg"
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array).save(path, "JPEG", quality=95)
    return path


def _check(image: Image.Image, source: Path, box: tuple[int, int, int, int] = BOX) -> None:
    assert max(image.size) == 352
    with Image.open(source) as folio:
        assert mean_abs_diff(image, folio, box, blur=2.0) < 4.0
        shifted = (box[0] + 5, box[1] + 5, box[2], box[3])
        assert mean_abs_diff(image, folio, shifted, blur=2.0) > 4.0


def _one_canvas_v3(service: list[dict[str, Any]] | None, static_url: str, canvas_size: tuple[int, int] = SIZE) -> Any:
    body = v3_image_body(static_url, SIZE, service)
    canvas = v3_canvas("https://example.org/canvas/1", canvas_size, body=body)
    return parse_manifest(v3_manifest("https://example.org/m", [canvas]), url="https://example.org/m").canvases[0]


def _region(canvas: Any, scale: float = 1.0) -> Region:
    x, y, w, h = (round(v * scale) for v in BOX)
    return Region(0, canvas.id, 0, (x, y, w, h), "test")


def _dzsave(source: Path, target: Path, layout: str, base_id: str) -> None:
    if shutil.which("vips") is None:
        pytest.skip("vips not installed: apt-get install libvips-tools (scripts/setup.sh does it)")
    target.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["vips", "dzsave", str(source), str(target), "--layout", layout, "--tile-size", "256", "--id", base_id],
        check=True,
        capture_output=True,
    )


def _image_requests(server: Any, prefix: str, start: int) -> list[str]:
    return [p for p, _ in server.log[start:] if p.startswith(prefix) and not p.endswith("info.json")]


@pytest.mark.parametrize(("layout", "version"), [("iiif3", 3), ("iiif", 2)])
def test_level0_tiles_without_region_requests(
    layout: str, version: int, synthetic: Path, static_server: Any, fetcher: Any
) -> None:
    prefix = f"/level0-{layout}"
    _dzsave(synthetic, static_server.root / prefix.strip("/") / "folio", layout, f"{static_server.url}{prefix}")
    if version == 3:
        service = [{"id": f"{static_server.url}{prefix}/folio", "type": "ImageService3", "profile": "level0"}]
    else:
        service = [
            {
                "@id": f"{static_server.url}{prefix}/folio",
                "@type": "ImageService2",
                "profile": "http://iiif.io/api/image/2/level0.json",
            }
        ]
    canvas = _one_canvas_v3(service, f"{static_server.url}/synthetic/folio.jpg")
    start = len(static_server.log)
    image = fetch_region(_region(canvas), canvas, long_side=352, fetcher=fetcher)
    _check(image, synthetic)
    requested = _image_requests(static_server, prefix, start)
    assert requested, "tiles were fetched"
    for path in requested:  # every request is a tile of the static set: no arbitrary region or size
        assert (static_server.root / path.lstrip("/")).is_file(), path
    assert not static_server.paths("/synthetic/folio.jpg")


def test_level0_sizes_only(synthetic: Path, static_server: Any, fetcher: Any) -> None:
    """A level-0 service listing full-image sizes and no tiles: the smallest size large enough is
    downloaded and cropped locally."""
    root = static_server.root / "sizes-only" / "folio"
    sizes = [(100, 125), (200, 250), (400, 500), (600, 750), (800, 1000)]
    with Image.open(synthetic) as full:
        for w, h in sizes:
            path = root / "full" / f"{w}," / "0" / "default.jpg"
            path.parent.mkdir(parents=True, exist_ok=True)
            full.resize((w, h), Image.Resampling.LANCZOS).save(path, "JPEG", quality=95)
    info = {
        "@context": "http://iiif.io/api/image/2/context.json",
        "@id": f"{static_server.url}/sizes-only/folio",
        "protocol": "http://iiif.io/api/image",
        "width": SIZE[0],
        "height": SIZE[1],
        "profile": ["http://iiif.io/api/image/2/level0.json"],
        "sizes": [{"width": w, "height": h} for w, h in sizes],
    }
    (root / "info.json").write_text(json.dumps(info))
    service = [
        {
            "@id": f"{static_server.url}/sizes-only/folio",
            "@type": "ImageService2",
            "profile": "http://iiif.io/api/image/2/level0.json",
        }
    ]
    canvas = _one_canvas_v3(service, f"{static_server.url}/synthetic/folio.jpg")
    start = len(static_server.log)
    image = fetch_region(_region(canvas), canvas, long_side=352, fetcher=fetcher)
    _check(image, synthetic)
    assert _image_requests(static_server, "/sizes-only", start) == ["/sizes-only/folio/full/600,/0/default.jpg"]


def test_image_api_3_service(synthetic: Path, static_server: Any, fetcher: Any) -> None:
    base = image_api3_route(static_server, "/iiif3/", {"folio": synthetic})
    service = [{"id": f"{base}folio", "type": "ImageService3", "profile": "level1"}]
    canvas = _one_canvas_v3(service, f"{base}folio/full/max/0/default.jpg")
    start = len(static_server.log)
    image = fetch_region(_region(canvas), canvas, long_side=352, fetcher=fetcher)
    _check(image, synthetic)
    x, y, w, h = BOX
    assert _image_requests(static_server, "/iiif3/", start) == [f"/iiif3/folio/{x},{y},{w},{h}/352,/0/default.jpg"]
    info, _ = fetcher.get_json(f"{base}folio/info.json")
    parsed = parse_info(info, url=f"{base}folio")
    assert (parsed.version, parsed.level, parsed.max_width, parsed.max_height) == (3, 1, 1000, 1000)
    big = fetch_region(_region(canvas), canvas, long_side=5000, fetcher=fetcher)
    assert big.size == (600, 500)  # never upscaled beyond the region


def test_failed_region_requests_fall_back_to_tiles(synthetic: Path, static_server: Any, fetcher: Any) -> None:
    """A service that claims level 1 but only has static tiles (region requests get 404)."""
    prefix = "/claims-level1"
    target = static_server.root / prefix.strip("/") / "folio"
    _dzsave(synthetic, target, "iiif", f"{static_server.url}{prefix}")
    info = json.loads((target / "info.json").read_text())
    info["profile"][0] = "http://iiif.io/api/image/2/level1.json"
    (target / "info.json").write_text(json.dumps(info))
    service = [
        {
            "@id": f"{static_server.url}{prefix}/folio",
            "@type": "ImageService2",
            "profile": "http://iiif.io/api/image/2/level1.json",
        }
    ]
    canvas = _one_canvas_v3(service, f"{static_server.url}/synthetic/folio.jpg")
    start = len(static_server.log)
    image = fetch_region(_region(canvas), canvas, long_side=352, fetcher=fetcher)
    _check(image, synthetic)
    x, y, w, h = BOX
    assert _image_requests(static_server, prefix, start)[0] == f"{prefix}/folio/{x},{y},{w},{h}/352,/0/default.jpg"


def test_static_image_on_a_larger_canvas(synthetic: Path, static_server: Any, fetcher: Any) -> None:
    """No image service: download the image and crop locally; the canvas is twice the image."""
    canvas = v2_canvas(
        "https://example.org/canvas/s",
        (2 * SIZE[0], 2 * SIZE[1]),
        image_url=f"{static_server.url}/synthetic/folio.jpg",
        image_size=SIZE,
    )
    canvas_obj = parse_manifest(v2_manifest("https://example.org/m2", [canvas])).canvases[0]
    assert canvas_obj.image is not None and canvas_obj.image.service_id is None
    image = fetch_region(_region(canvas_obj, scale=2.0), canvas_obj, long_side=352, fetcher=fetcher)
    _check(image, synthetic)


def test_broken_service_falls_back_to_the_static_image(synthetic: Path, static_server: Any, fetcher: Any) -> None:
    service = [
        {
            "@id": f"{static_server.url}/no-such-service/folio",
            "@type": "ImageService2",
            "profile": "http://iiif.io/api/image/2/level2.json",
        }
    ]
    canvas = _one_canvas_v3(service, f"{static_server.url}/synthetic/folio.jpg")
    _check(fetch_region(_region(canvas), canvas, long_side=352, fetcher=fetcher), synthetic)


def test_html_error_pages_everywhere_give_a_clear_error(static_server: Any, fetcher: Any) -> None:
    info = {
        "@context": "http://iiif.io/api/image/2/context.json",
        "@id": f"{static_server.url}/liar/folio",
        "width": 800,
        "height": 1000,
        "profile": ["http://iiif.io/api/image/2/level2.json"],
    }
    static_server.write_json("liar/folio/info.json", info)
    html = b"<html><body>Status: 400 Bad Request</body></html>"
    static_server.routes["/liar/folio/"] = lambda h: (
        (200, {"Content-Type": "application/json"}, json.dumps(info).encode())
        if h.path.endswith("info.json")
        else (200, {"Content-Type": "image/jpeg"}, html)
    )
    service = [
        {
            "@id": f"{static_server.url}/liar/folio",
            "@type": "ImageService2",
            "profile": "http://iiif.io/api/image/2/level2.json",
        }
    ]
    canvas = _one_canvas_v3(service, f"{static_server.url}/liar/folio/full/full/0/default.jpg")
    with pytest.raises(FetchError, match="not an image") as error:
        fetch_region(_region(canvas), canvas, long_side=352, fetcher=fetcher)
    assert f"{static_server.url}/liar/folio" in error.value.message


def test_region_outside_the_image(synthetic: Path, static_server: Any, fetcher: Any) -> None:
    canvas = _one_canvas_v3(None, f"{static_server.url}/synthetic/folio.jpg", canvas_size=(4000, 5000))
    region = Region(0, canvas.id, 0, (3000, 4000, 500, 500), "x")  # inside the canvas, the image is smaller
    image = fetch_region(region, canvas, long_side=352, fetcher=fetcher)
    assert image.size == (100, 100)  # the static image spans the canvas: 800/4000 of 500 px
    canvas_off = _one_canvas_v3(None, f"{static_server.url}/synthetic/folio.jpg")
    with pytest.raises(FetchError, match="falls outside its image"):
        fetch_region(Region(0, canvas_off.id, 0, (900, 1100, 10, 10), "x"), canvas_off, long_side=352, fetcher=fetcher)


@pytest.mark.parametrize(
    ("size", "long_side", "caps", "expected"),
    [
        ((600, 500), 352, {}, (352, 293)),
        ((500, 600), 352, {}, (293, 352)),
        ((200, 100), 352, {}, (200, 100)),  # never upscaled
        ((4000, 3000), 5000, {"max_width": 1000}, (1000, 750)),
        ((3000, 4000), 5000, {"max_width": 1000, "max_height": 1000}, (750, 1000)),
        ((4000, 4000), 5000, {"max_area": 1_000_000}, (1000, 1000)),
        ((1, 10_000), 352, {}, (1, 352)),
    ],
)
def test_target_size(size: tuple[int, int], long_side: int, caps: dict[str, int], expected: tuple[int, int]) -> None:
    assert target_size(*size, long_side, **caps) == expected


def test_parse_info_versions() -> None:
    v1 = {
        "@context": "http://library.stanford.edu/iiif/image-api/1.1/context.json",
        "@id": "https://x/iiif/p1",
        "width": 100,
        "height": 200,
        "profile": "http://library.stanford.edu/iiif/image-api/1.1/compliance.html#level1",
    }
    info = parse_info(v1, url="https://x/iiif/p1")
    assert (info.version, info.level, info.quality) == (1, 1, "native")
    v2 = {
        "@context": "http://iiif.io/api/image/2/context.json",
        "@id": "http://other-host:8080/iiif/p1",
        "width": 100,
        "height": 200,
        "profile": ["http://iiif.io/api/image/2/level0.json", {"supports": ["regionByPx", "sizeByW"]}],
        "tiles": [{"width": 256, "scaleFactors": [1, 2, 4]}],
        "sizes": [{"width": 50, "height": 100}, {"width": "x"}],
    }
    info = parse_info(v2, url="https://x/iiif/p1")
    assert info.id == "https://x/iiif/p1"  # a declared id on another host is not trusted
    assert info.level == 0 and info.supports("regionByPx") and not info.supports("regionByPct")
    assert info.tiles[0].height == 256 and info.sizes == ((50, 100),)
    v3 = {
        "@context": "http://iiif.io/api/image/3/context.json",
        "id": "https://x/iiif3/p1/",
        "type": "ImageService3",
        "profile": "level2",
        "width": 100,
        "height": 200,
        "maxArea": 5000,
        "extraFeatures": ["mirroring"],
    }
    info = parse_info(v3, url="https://x/iiif3/p1")
    assert (info.version, info.level, info.max_area, info.id) == (3, 2, 5000, "https://x/iiif3/p1")
    assert info.supports("regionByPct") and info.supports("mirroring")


@pytest.mark.parametrize(
    "doc", [[], {"width": 0, "height": 10}, {"width": "10", "height": 10}, {"width": 10**9, "height": 5}]
)
def test_unusable_info_json(doc: Any) -> None:
    from collation.core.errors import ManifestError

    with pytest.raises(ManifestError, match=r"info\.json of https://x/iiif/p1"):
        parse_info(doc, url="https://x/iiif/p1")
