"""The workspace in a real browser, the whole way a historian goes: open ``/``, paste the P2 and P3
manifests (served with iipsrv) and one address that answers 404, see what each gives (regions,
thumbnails through the Image API, the planted problem in words), remove the bad one, start, watch the
progress to the end (real Redis, an in-process worker), open the matches, give a verdict with the
keyboard alone, and download the concordance CSV. Screenshots of each step go to
``$COLLATION_SCREENSHOT_DIR`` when it is set (the ``screenshots`` fixture of the viewer test).
"""

from __future__ import annotations

import csv
import io
import re
import threading
from typing import Any

import pytest
import requests
from redis import Redis
from service_helpers import physiologus_v2, physiologus_v3
from viewer_service import CANVAS_SCALE, TIMEOUT_MS, run_worker

pytestmark = pytest.mark.slow


REGIONS = 8  # the first illustrations of P2 and P3: enough for matches, quick on a CPU


@pytest.fixture
def manifests(served: Any, site: Any, iipsrv: Any) -> list[str]:
    """P2 (canvases twice their images, regions in annotation lists) and P3 (tagging annotations)."""
    p2, _ = physiologus_v2(
        f"{site.url}/workspace/P2/manifest.json",
        "P2 Ott.gr.354",
        iipsrv.boxes["P2"][:REGIONS],
        iipsrv,
        canvas_scale=CANVAS_SCALE,
        site=site,
    )
    p3, _ = physiologus_v3(
        f"{site.url}/workspace/P3/manifest.json",
        "P3 Marc.gr.IV.35",
        iipsrv.boxes["P3"][:REGIONS],
        iipsrv,
        tagging=True,
    )
    return [site.write_json("workspace/P2/manifest.json", p2), site.write_json("workspace/P3/manifest.json", p3)]


def shot(tab: Any, folder: Any, name: str) -> None:
    tab.screenshot(path=str(folder / f"workspace-{name}.png"), full_page=True)


def test_a_historian_goes_the_whole_way(
    served: Any,
    site: Any,
    manifests: list[str],
    page: Any,
    screenshots: Any,
) -> None:
    Redis.from_url(served.settings.redis_url).flushdb()
    root = served.url.removesuffix("/api/v1")
    page.set_viewport_size({"width": 1280, "height": 800})
    page.set_default_timeout(TIMEOUT_MS)
    missing = f"{site.url}/workspace/missing/manifest.json"  # the planted problem: a 404

    page.goto(f"{root}/")
    page.get_by_role("link", name="New collation").first.wait_for()
    shot(page, screenshots, "1-home")
    page.get_by_role("link", name="New collation").first.click()
    # the address of a IIIF Collection that lists the two manuscripts and the planted 404
    collection = site.write_json(
        "workspace/collection.json",
        {
            "@context": "http://iiif.io/api/presentation/3/context.json",
            "id": f"{site.url}/workspace/collection.json",
            "type": "Collection",
            "label": {"en": ["Physiologus witnesses"]},
            "items": [{"id": url, "type": "Manifest", "label": {"en": [url]}} for url in [*manifests, missing]],
        },
    )
    page.get_by_label("Manifest addresses").fill(collection)
    page.get_by_role("button", name="Look at these manifests").click()
    page.locator("#message", has_text="is a IIIF Collection of 3 manifest(s)").wait_for()
    assert page.get_by_label("Manifest addresses").input_value().split() == [*manifests, missing]
    page.wait_for_function("() => document.querySelectorAll('#preview .witness h3').length === 3")
    cards = page.locator("#preview .witness")
    p2 = cards.filter(has_text="P2 Ott.gr.354")
    assert re.search(rf"{REGIONS} illustrations \(the manifest.s own region annotations\)", p2.inner_text())
    assert f"{REGIONS} illustrations" in cards.filter(has_text="P3 Marc.gr.IV.35").inner_text()
    page.wait_for_function(
        "() => [...document.querySelectorAll('.region-thumb')].slice(0, 4).every(i => i.complete && i.naturalWidth > 0)"
    )
    assert page.locator(".region-thumb").count() == 12  # the first six of each witness
    bad = cards.filter(has_text="cannot be used")
    assert bad.count() == 1 and missing in bad.inner_text() and "remove this witness" in bad.inner_text()
    assert "Traceback" not in page.content() and "{" not in bad.inner_text()
    shot(page, screenshots, "2-inspect")

    bad.get_by_role("button", name="Remove this witness").click()
    assert page.get_by_label("Manifest addresses").input_value().split() == manifests
    assert page.locator("#estimate").inner_text().startswith(f"2 witnesses, {2 * REGIONS} illustrations")
    page.get_by_role("button", name="Start the collation").click()
    page.wait_for_url(re.compile(r"/collations/[0-9a-f]+$"))
    cid = page.url.rsplit("/", 1)[1]
    shot(page, screenshots, "3-follow")

    run_worker(served.settings)  # the whole graph; the page polls meanwhile (the server runs in a thread)
    page.locator("#state", has_text="Finished.").wait_for()
    page.reload()  # the page survives a reload: it reads everything from the API
    page.locator("#state", has_text="Finished.").wait_for()
    exports = page.locator("#exports a")
    assert exports.count() == 5  # CSV, XLSX, annotations, the two derived manifests
    shot(page, screenshots, "4-finished")

    with page.expect_download() as download:
        page.get_by_role("link", name="Concordance (CSV spreadsheet)").click()
    rows = list(csv.reader(io.StringIO(download.value.path().read_text(encoding="utf-8"))))
    header, body = rows[0], rows[1:]
    assert any("P2 Ott.gr.354" in h for h in header) and any("P3 Marc.gr.IV.35" in h for h in header)
    assert len(body) >= REGIONS // 2  # a row per group; most illustrations of P2 have their copy in P3

    page.get_by_role("link", name=re.compile("Open the matches")).click()
    page.wait_for_url(re.compile(rf"/api/v1/collations/{cid}/view"))
    page.locator("#correspondences .candidate").first.wait_for()
    selected = page.locator("#correspondences .candidate.selected")
    selected.wait_for()  # the page opens on the first match
    first = (selected.get_attribute("data-source"), selected.get_attribute("data-target"))
    page.locator("body").press("j")  # the keyboard walks to the next candidate...
    assert (selected.get_attribute("data-source"), selected.get_attribute("data-target")) != first
    page.keyboard.press("k")  # ...and back
    assert selected.count() == 1
    source, target = selected.get_attribute("data-source"), selected.get_attribute("data-target")
    assert (source, target) == first
    page.keyboard.press("1")  # exact copy
    page.locator("#message", has_text="Exact copy: No. ").wait_for()
    shot(page, screenshots, "5-verdict")
    items = requests.get(f"{served.url}/collations/{cid}/assessments", timeout=30).json()["items"]
    assert [(i["source"], i["target"], i["verdict"]) for i in items] == [(int(source), int(target), "confirmed")]
    assert page.errors == []


CONTRAST_JS = """
() => {
  // WCAG 2 contrast of every visible text element against its first opaque background
  const lum = (rgb) => rgb.map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
    .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
  const parse = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const background = (node) => {
    for (let n = node; n; n = n.parentElement) {
      const c = parse(getComputedStyle(n).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0.9)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const worst = [];
  let checked = 0, lowest = Infinity;
  for (const node of document.querySelectorAll('h1, h2, h3, p, label, legend, summary, a, button, th, td, li')) {
    const style = getComputedStyle(node);
    if (!node.textContent.trim() || !node.offsetParent || style.visibility === 'hidden') continue;
    const [a, b] = [lum(parse(style.color).slice(0, 3)), lum(background(node))];
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    checked += 1;
    lowest = Math.min(lowest, ratio);
    const large = parseFloat(style.fontSize) >= 24 || (parseFloat(style.fontSize) >= 18.66 && style.fontWeight >= 700);
    if (ratio < (large ? 3 : 4.5)) {
      worst.push(node.tagName + ' ' + node.textContent.trim().slice(0, 30) + ' ' + ratio.toFixed(2));
    }
  }
  return { worst, checked, lowest };
}
"""

UNNAMED_JS = """
() => [...document.querySelectorAll('input, select, textarea, button')]
  .filter(n => n.type !== 'hidden' && !(n.labels && n.labels.length) && !n.getAttribute('aria-label')
    && !n.textContent.trim())
  .map(n => n.outerHTML.slice(0, 80))
"""


@pytest.mark.parametrize("size", [(1280, 800), (820, 1180)], ids=["laptop", "tablet"])
def test_workspace_pages_fit_the_screen_and_name_their_controls(
    served: Any, page: Any, screenshots: Any, size: Any
) -> None:
    """Home, New collation and a collation's page at 1280 x 800 and at a tablet's 820 x 1180: nothing
    wider than the window, every control has a name a screen reader says, text contrast is WCAG AA,
    and Tab reaches the start button."""
    root = served.url.removesuffix("/api/v1")
    cid = served.cid or served.submit()
    page.set_viewport_size({"width": size[0], "height": size[1]})
    for name, path in (("home", "/"), ("new", "/new"), ("follow", f"/collations/{cid}")):
        page.goto(f"{root}{path}")
        page.locator("main").wait_for()
        page.wait_for_timeout(300)  # the first API answer is drawn
        width = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
        assert width[0] <= width[1], (name, width)
        assert page.evaluate(UNNAMED_JS) == [], name
        contrast = page.evaluate(CONTRAST_JS)
        assert contrast["worst"] == [] and contrast["checked"] >= 5 and contrast["lowest"] >= 4.5, (name, contrast)
        shot(page, screenshots, f"{name}-{size[0]}x{size[1]}")
    page.goto(f"{root}/new")
    page.get_by_label("Manifest addresses").focus()
    for _ in range(12):  # the form's controls, in order, then the start button
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == "start":
            break
    assert page.evaluate("document.activeElement.id") == "start"
    assert page.errors == []


def test_the_follow_page_survives_a_service_restart(
    site: Any, synthetic: Any, redis_server: Any, tmp_path: Any, page: Any, screenshots: Any
) -> None:
    """The collation page stays open while the service stops and starts again on the same data
    store and Redis (another process would do the same): it says it lost the service, then finds
    the collation again and follows it to the end."""
    from service_helpers import drain, service_settings
    from werkzeug.serving import make_server

    from collation.app import create_app
    from collation.cli.private_servers import free_port
    from collation.service.state import service_state

    url = redis_server[1].rsplit("/", 1)[0] + "/5"
    Redis.from_url(url).flushdb()
    settings = service_settings(tmp_path / "data", url, public_url=None)
    port = free_port()

    def serve() -> tuple[Any, Any]:
        app = create_app(settings)
        server = make_server("127.0.0.1", port, app, threaded=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return app, server

    app, server = serve()
    root = f"http://127.0.0.1:{port}"
    body = {"manifests": [synthetic.a, synthetic.b], "regions": {"1": synthetic.b_regions}}
    cid = requests.post(f"{root}/api/v1/collations", json=body, timeout=30).json()["id"]
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(f"{root}/collations/{cid}")
    page.locator("#witnesses li").first.wait_for()  # the first status is drawn
    server.shutdown()  # the service stops...
    service_state(app).close()
    page.locator("#message.error").wait_for()  # ...the page says so, and keeps asking
    shot(page, screenshots, "restart-1-service-gone")
    app, server = serve()  # ...and starts again
    try:
        drain(settings)
        page.locator("#state", has_text="Finished.").wait_for()
        assert page.locator("#exports a").count() == 5
        shot(page, screenshots, "restart-2-finished")
    finally:
        server.shutdown()
        service_state(app).close()


def test_detected_regions_are_reviewed_and_corrected_before_starting(
    served: Any, synthetic: Any, page: Any, screenshots: Any
) -> None:
    """Manuscript B has no region annotations: its illustrations are detected. The historian opens
    them on the pages, removes one box with a click and the Delete key, draws one with the mouse, and
    starts: the collation's request carries exactly those regions, and the collation uses them."""
    from test_region_editor_browser import need_annotorious

    need_annotorious()
    Redis.from_url(served.settings.redis_url).flushdb()
    root = served.url.removesuffix("/api/v1")
    page.set_viewport_size({"width": 1280, "height": 800})
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(f"{root}/new")
    page.get_by_label("Manifest addresses").fill("\n".join([synthetic.a, synthetic.b]))
    page.get_by_role("button", name="Look at these manifests").click()
    page.wait_for_function("() => document.querySelectorAll('#preview .witness h3').length === 2")
    card = page.locator("#preview .witness").filter(has_text="Manuscript B")
    assert "detected on the page images" in card.locator(".summary").inner_text()

    card.get_by_role("button", name="Review the regions on the pages").click()
    found = int(card.locator(".review-status").inner_text().split()[0])  # "N illustration(s)."
    assert found >= 2
    # every page's boxes drawn by Annotorious (static/review.js): one annotator per loaded page image
    page.wait_for_function("(n) => document.querySelectorAll('.a9s-annotation').length === n", arg=found)
    boxes = card.locator(".a9s-annotation")
    boxes.first.locator("rect").last.click()  # a wrong box, selected with the mouse, removed with the key
    # as the historian does: the key once the page shows the selection (Annotorious reports it a frame later)
    page.wait_for_function(
        "(el) => el.textContent.includes('1 selected')", arg=card.locator(".review-status").element_handle()
    )
    page.keyboard.press("Delete")
    assert card.locator(".review-status").inner_text().startswith(f"{found - 1} illustration(s)")
    card.get_by_role("button", name="Draw a box").click()
    card.locator(".review-page img").last.scroll_into_view_if_needed()
    image = card.locator(".review-page img").last.bounding_box()
    page.mouse.move(image["x"] + 0.1 * image["width"], image["y"] + 0.7 * image["height"])
    page.mouse.down()
    page.mouse.move(image["x"] + 0.5 * image["width"], image["y"] + 0.9 * image["height"], steps=5)
    page.mouse.up()
    card.locator(".review-status", has_text=f"{found} illustration(s)").wait_for()
    shot(page, screenshots, "review-regions")
    card.get_by_role("button", name="Use these regions").click()
    assert f"{found} illustrations (reviewed by you" in card.locator(".summary").inner_text()

    page.get_by_role("button", name="Start the collation").click()
    page.wait_for_url(re.compile(r"/collations/[0-9a-f]+$"))
    cid = page.url.rsplit("/", 1)[1]
    doc = served.status(cid)
    given = doc["request"]["regions"]["1"] if "request" in doc else None
    if given is None:  # the status document does not echo the request: read the record
        from collation.store.location import open_store

        given = open_store(served.settings).load_record(cid).request.regions["1"]
    assert len(given) == found and all(
        len(r["xywh"]) == 4 and r["canvas"].startswith(synthetic.b.rsplit("/", 1)[0]) for r in given
    )
    drawn = given[-1]["xywh"]  # in canvas coordinates (420 x 600 folios): about 10-50 % across, 70-90 % down
    assert (
        abs(drawn[0] - 42) < 15 and abs(drawn[1] - 420) < 20 and abs(drawn[2] - 168) < 20 and abs(drawn[3] - 120) < 20
    )
    run_worker(served.settings)
    page.locator("#state", has_text="Finished.").wait_for()
    assert served.status(cid)["manuscripts"][1]["regions"] == found
    assert page.errors == []
