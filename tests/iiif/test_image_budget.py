"""Images decoded under a memory budget (issue 41, item 5): six 1.5 MB JPEGs of 9,000 x 11,000 pixels in
one manifest took 3,964 MB of a worker's memory, one 117 KB PNG of 9,990 x 9,990 1,624 MB. A JPEG is now
decoded at the smallest of libjpeg's scales that still gives the region its pixels, an image whose
decoded size passes ``COLLATION_IIIF_MAX_DECODED_BYTES`` is refused before it is decoded, and large
images are decoded one at a time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from builders import v2_canvas, v2_manifest
from PIL import Image

from collation.core.errors import LimitError
from collation.net import decode
from collation.net.http import LARGE_DECODE

REPO = Path(__file__).resolve().parents[2]
FOLIO = (9000, 11000)

MEASURE = """
import json, sys
from collation.iiif.sources import load_manuscript_regions
from collation.net.http import Fetcher
fetcher = Fetcher(allowed_hosts=["127.0.0.1"], retries=0)
got = load_manuscript_regions(sys.argv[1], fetcher=fetcher, whole_canvases=True, workers=4)
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")) * 1024
print(json.dumps({"peak": peak, "sizes": [image.size for image in got.images]}))
"""
"""What the prepare step does with a manifest (``load_manuscript_regions``, four fetch threads), in a
process of its own; it prints its peak resident memory (VmHWM) and the regions' sizes."""

MAKE_FOLIO = """
import sys
from PIL import Image, ImageDraw
image = Image.new("RGB", (9000, 11000), (236, 228, 210))
draw = ImageDraw.Draw(image)
for k in range(40):
    draw.rectangle((200 * k, 250 * k, 200 * k + 1500, 250 * k + 900), outline=(60, 40, 20), width=25)
image.save(sys.argv[1], quality=80)
"""


@pytest.mark.slow
def test_six_folio_jpegs_decode_in_a_fraction_of_their_size(static_server: Any) -> None:
    """The six-JPEG case of the hostile run, measured in a process of its own."""
    folder = static_server.root / "folios"
    folder.mkdir(exist_ok=True)
    subprocess.run([sys.executable, "-c", MAKE_FOLIO, str(folder / "0.jpg")], check=True, timeout=120)
    assert 0.1 * 2**20 < (folder / "0.jpg").stat().st_size < 3 * 2**20
    for k in range(1, 6):
        os.link(folder / "0.jpg", folder / f"{k}.jpg")
    base = f"{static_server.url}/folios"
    canvases = [v2_canvas(f"{base}/c{k}", FOLIO, image_url=f"{base}/{k}.jpg") for k in range(6)]
    manifest = static_server.write_json("folios/manifest.json", v2_manifest(f"{base}/manifest.json", canvases))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, manifest], check=True, capture_output=True, text=True, env=env, timeout=300
    )
    found = json.loads(out.stdout)
    print(f"\nsix 9,000 x 11,000 JPEGs, whole canvases at 352 px: peak RSS {found['peak'] / 2**20:.0f} MiB")
    assert [tuple(size) for size in found["sizes"]] == [(288, 352)] * 6
    assert found["peak"] < 600 * 2**20  # decoded whole, one is 283 MiB; four threads at once took gigabytes


def test_a_png_over_the_decode_budget_is_refused_before_it_is_decoded(tmp_path: Path) -> None:
    """A 10,000 x 10,000 palette PNG of 140 KB is 100 MB decoded, 400 MB once RGB."""
    image = Image.new("P", (10_000, 10_000))
    path = tmp_path / "bomb.png"
    image.save(path, optimize=True)
    data = path.read_bytes()
    assert len(data) < 500_000
    with pytest.raises(LimitError, match=r"would take 381 MiB decoded, more than COLLATION_IIIF_MAX_DECODED_BYTES"):
        decode.open_image(data, url="http://lib.test/bomb.png", max_decoded_bytes=256 * 2**20)
    opened = decode.open_image(data, url="http://lib.test/bomb.png", max_decoded_bytes=2**30)
    assert decode.decoded_bytes(opened) == 400_000_000 and opened.size == (10_000, 10_000)


def test_large_images_are_decoded_one_at_a_time(fetcher: Any, static_server: Any, monkeypatch: Any) -> None:
    """Four threads fetching four large images decode them one after the other; small ones at once."""
    Image.new("L", (5000, 5000), 200).save(static_server.root / "large.png")  # 100 MB decoded as RGB + L
    Image.new("L", (500, 500), 200).save(static_server.root / "small.png")
    assert 5000 * 5000 * 4 > LARGE_DECODE > 500 * 500 * 4
    active, peak, lock = [0], {"large.png": 0, "small.png": 0}, threading.Lock()
    real = decode.finish_image

    def finish(image: Image.Image, *, url: str, what: str = "image") -> Image.Image:
        name = url.rsplit("/", 1)[-1].split("?")[0]
        with lock:
            active[0] += 1
            peak[name] = max(peak[name], active[0])
        time.sleep(0.2)
        try:
            return real(image, url=url, what=what)
        finally:
            with lock:
                active[0] -= 1

    monkeypatch.setattr("collation.net.http.finish_image", finish)
    for name in ("large.png", "small.png"):
        active[0] = 0
        urls = [f"{static_server.url}/{name}?copy={k}" for k in range(4)]
        threads = [threading.Thread(target=fetcher.get_image, args=(url,)) for url in urls]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert peak == {"large.png": 1, "small.png": 4}
