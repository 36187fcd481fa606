"""Detection for review in the New collation page (issue 39, item 1), in Chromium: a generated manuscript
of 10 folios without region annotations (more than the inspection searches itself, lowered from 24 to 6 here
so that a worker searches few pages) is looked at at once, its pages are searched by a worker (in this
process: ``service_helpers.drain``; no worker process to start, nor its backbone to load), and the page
shows the pages searched and the illustrations found while the search goes on (its first page before the
worker goes on), then all of them, their thumbnails and the estimate; the collation then starts with the
regions found (the workers do not search again). ``generated_manuscript`` also makes the 400 folios of
``benchmarks/walk.py``."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from builders import v3_canvas, v3_image_body, v3_manifest
from PIL import Image
from service_helpers import drain, served_app
from synthetic import shapes

from collation.app import create_app
from collation.core.settings import Settings
from collation.store.location import open_store

pytestmark = pytest.mark.slow

FOLIOS = 10  # more than the pages the inspection searches itself (DETECT_IN_INSPECTION, lowered to SEARCHED_AT_ONCE)
SEARCHED_AT_ONCE = 6
TIMEOUT_MS = 60_000


def shot(page: Any, name: str) -> None:
    folder = os.environ.get("COLLATION_SCREENSHOT_DIR")
    if folder:
        page.screenshot(path=str(Path(folder) / f"round3-{name}.png"), full_page=True)


def generated_manuscript(site: Any, name: str, folios: int) -> str:
    """A IIIF 3 manifest of ``folios`` 420 x 600 folios, one drawing on each (``synthetic.shapes``), plain
    JPEGs on the static site, no region annotations; its URL."""
    canvases = []
    for f in range(folios):
        path = site.root / name / f"f{f}.jpg"
        if not path.exists():
            folio = Image.new("RGB", (420, 600), (250, 245, 235))
            folio.paste(shapes(f), (60 + 7 * (f % 9), 40 + 11 * (f % 13)))
            path.parent.mkdir(parents=True, exist_ok=True)
            folio.save(path, quality=90)
        canvas_id = f"{site.url}/{name}/canvas/{f}"
        body = v3_image_body(f"{site.url}/{name}/f{f}.jpg", (420, 600))
        canvases.append(v3_canvas(canvas_id, (420, 600), body=body, label=f"f. {f // 2 + 1}{'rv'[f % 2]}"))
    url = f"{site.url}/{name}/manifest.json"
    return site.write_json(f"{name}/manifest.json", v3_manifest(url, canvases, f"Generated codex of {folios} folios"))


@pytest.fixture
def service(tmp_path: Path, redis_url: str) -> Iterator[tuple[str, Settings]]:
    settings = Settings.from_env(
        {},
        data_dir=tmp_path / "data",
        redis_url=redis_url,
        allowed_hosts=("127.0.0.1",),
        backbone="efficientnet-lite0",
        device="cpu",
        sweep_interval=0,
    )
    with served_app(create_app(settings, TESTING=True)) as url:
        yield url, settings


def test_the_new_page_shows_the_pages_as_the_workers_search_them(
    service: tuple[str, Settings],
    site: Any,
    synthetic: Any,
    browser: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from collation.jobs import review
    from collation.viewer import workspace

    monkeypatch.setattr(workspace, "DETECT_IN_INSPECTION", SEARCHED_AT_ONCE)  # the app runs in this process
    root, settings = service
    generated = generated_manuscript(site, f"generated-{FOLIOS}", FOLIOS)
    page = browser.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    # The worker's job waits, after saving its first page, until the page shows it: shown while the search
    # goes on, whatever the machine's speed (the page asks every 250 ms until its first page).
    shown: list[str] = []
    save, line = review._save, page.locator(".witness .detecting")

    def save_and_look(store: Any, doc: dict[str, Any]) -> None:
        save(store, doc)
        if 0 < doc["done"] < doc["total"] and not shown:
            line.filter(has_text=f"{doc['done']} of {FOLIOS} pages searched").wait_for()
            shown.append(line.inner_text())
            shot(page, "new-detecting-1280")

    monkeypatch.setattr(review, "_save", save_and_look)
    try:
        page.goto(f"{root}/new")
        page.get_by_label("Manifest addresses").fill("\n".join([generated, synthetic.a]))
        page.get_by_role("button", name="Look at these manifests").click()
        line.filter(has_text="pages searched").wait_for()  # inspected without searching; the search is queued
        drain(settings)  # a worker in this process (the app serves the page's polls from its thread)
        line.filter(has_text=f"All {FOLIOS} pages searched").wait_for()
        assert len(shown) == 1 and re.match(rf"Finding the illustrations on the pages: 1 of {FOLIOS} ", shown[0])
        final = re.fullmatch(rf"All {FOLIOS} pages searched: (\d+) illustrations found\.", line.inner_text())
        assert final and int(final.group(1)) >= FOLIOS, line.inner_text()  # a drawing may be two boxes
        n = int(final.group(1))
        card = page.locator(".witness").filter(has_text="Generated codex")
        assert card.locator(".thumbs > *").count() == 6
        assert (
            f"{FOLIOS} pages, {n} illustrations (detected on the page images)" in card.locator(".summary").inner_text()
        )
        assert f"2 witnesses, {n + synthetic.n} illustrations" in page.locator("#estimate").inner_text()
        shot(page, "new-detected-1280")
        page.set_viewport_size({"width": 820, "height": 1180})
        shot(page, "new-detected-820")
        page.get_by_role("button", name="Start the collation").click()
        page.wait_for_url(re.compile(r"/collations/[0-9a-f]+$"))
        cid = page.url.rsplit("/", 1)[1]
        given = open_store(settings).load_record(cid).request.regions["0"]  # the search's regions, not again
        assert len(given) == n and given[0]["canvas"].endswith(f"/generated-{FOLIOS}/canvas/0")
        assert errors == []
    finally:
        page.close()
