"""The viewer in a real browser: Debian's Chromium driven by Playwright, the service on a loopback
port, the Physiologus folios (P2, P3) behind iipsrv, a collation computed by an in-process worker.

What a historian does is what is checked: open the view of the finished collation, see Mirador list
the correspondence annotation of the matched canvases in both windows and draw its box, confirm the
match and find the assessment stored; watch a running collation's progress without reloading; look
at the score matrix, whose diagonal stands out. Screenshots go to a temporary folder and, when
``COLLATION_SCREENSHOT_DIR`` is set, are copied there.

Assertions follow test-infrastructure.md §6 ("How to assert that an annotation is shown"): the DOM
listing, the Redux state, and alpha pixels of Mirador's overlay canvas along the expected outline.
Everything stays on 127.0.0.1; the browser downloads nothing (no ``playwright install``).
"""

from __future__ import annotations

import io
import json
import os
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import requests
from builders import v2_canvas, v2_manifest
from PIL import Image
from viewer_service import CANVAS_SCALE, REGIONS, TIMEOUT_MS, Served, run_worker

from collation.publish.content_state import build_content_state, decode, encode, read_targets
from collation.viewer import pages as viewer_routes
from collation.viewer.matrix import COLORS, layout

pytestmark = pytest.mark.slow

PICK = 3  # the correspondence the test looks at: P2 illustration 3 <-> P3 illustration 3


def need_mirador(version: str) -> None:
    name = f"mirador-{version}.min.js"
    if not (viewer_routes.STATIC / "vendor" / name).is_file():
        pytest.skip(f"{name} is not installed (scripts/setup.sh fetches it from npm)")


# --------------------------------------------------------------------------------------------------
# Reading Mirador's state and overlay from the page

OVERLAY_JS = """
([windowId, box, control]) => {
  const state = window.viewer.store.getState();
  const s = state.viewers[windowId];
  const win = document.getElementById(windowId);
  const overlay = win && win.querySelector('.openseadragon-canvas > div > canvas');
  if (!s || !overlay || !overlay.width) return null;
  const W = overlay.width, H = overlay.height;
  const data = overlay.getContext('2d').getImageData(0, 0, W, H).data;
  const near = (px, py) => {
    for (let dy = -2; dy <= 2; dy++) for (let dx = -2; dx <= 2; dx++) {
      const x = Math.round(px) + dx, y = Math.round(py) + dy;
      if (x >= 0 && y >= 0 && x < W && y < H && data[(y * W + x) * 4 + 3] > 0) return true;
    }
    return false;
  };
  const score = ([X, Y, w, h]) => {
    let hits = 0, total = 0;
    for (let k = 0; k <= 40; k++) {
      const t = k / 40;
      for (const [cx, cy] of [[X + t * w, Y], [X + t * w, Y + h], [X, Y + t * h], [X + w, Y + t * h]]) {
        const px = (cx - s.x) * s.zoom * W + W / 2, py = (cy - s.y) * s.zoom * W + H / 2;
        if (px < 0 || py < 0 || px >= W || py >= H) continue;
        total += 1;
        if (near(px, py)) hits += 1;
      }
    }
    return total ? hits / total : 0;
  };
  return {box: score(box), control: score(control), width: W, height: H};
}
"""

ANNOTATION_IDS_JS = """
([canvasId]) => {
  const pages = window.viewer.store.getState().annotations[canvasId] || {};
  return Object.values(pages).flatMap(p => {
    const json = p.json || {};
    return (json.items || json.resources || []).map(a => a.id || a['@id']);
  });
}
"""


def mirador_window(page: Any, window_id: str) -> Any:
    return page.locator(f'[id="{window_id}"]')


def check_annotation_shown(
    page: Any,
    window_id: str,
    canvas_id: str,
    link: str,
    side: str,
    xywh: list[int],
    listed_text: re.Pattern[str],
    scale: float = 1,
) -> dict[str, Any]:
    """The three levels of §6: listed in the window's panel, loaded in Redux, drawn on the overlay
    (with ``scale``, the canvas-to-image factor, also: nothing where mirador#4533 would draw it)."""
    try:
        page.wait_for_function(
            "([w, c]) => { const s = window.viewer && window.viewer.store.getState().windows[w];"
            " return !!s && s.canvasId === c; }",
            arg=[window_id, canvas_id],
            timeout=TIMEOUT_MS,
        )
    except Exception as exc:
        windows = page.evaluate(
            "() => window.viewer && Object.entries(window.viewer.store.getState().windows)"
            ".map(([k, v]) => [k, v.canvasId, v.manifestId])"
        )
        raise AssertionError(f"{window_id} is not on {canvas_id}: {windows}; page errors {page.errors}") from exc
    # 1. listed in the annotation panel of this window
    mirador_window(page, window_id).get_by_text(listed_text).first.wait_for(timeout=TIMEOUT_MS)
    # 2. loaded: the display annotation of the link, on this canvas
    suffix = f"/display/{link}-{side}"
    page.wait_for_function(
        f"([c, sfx]) => ({ANNOTATION_IDS_JS})([c]).some(id => id && id.endsWith(sfx))",
        arg=[canvas_id, suffix],
        timeout=TIMEOUT_MS,
    )
    # 3. drawn: alpha along >= 90 % of the box outline, nothing around a control box
    x, y, w, h = xywh
    control = [x + w // 4, y + h // 4, w // 2, h // 2]  # inside the illustration, off its outline
    page.wait_for_function(
        f"(args) => {{ const r = ({OVERLAY_JS})(args); return r && r.box >= 0.9; }}",
        arg=[window_id, xywh, control],
        timeout=TIMEOUT_MS,
    )
    result = page.evaluate(OVERLAY_JS, [window_id, xywh, control])
    assert result["box"] >= 0.9 and result["control"] <= 0.05, result
    if scale != 1:  # where Mirador would draw the box scaled by the image's pixels (mirador#4533): nothing
        misplaced = [round(v * scale) for v in xywh]
        result["misplaced"] = page.evaluate(OVERLAY_JS, [window_id, misplaced, control])["box"]
        assert result["misplaced"] <= 0.05, result
    return result


def assert_selected(page: Any, link: str) -> None:
    """Both windows have the display annotation of ``link`` selected (its side a and side b)."""
    for window_id, side in (("collation-a", "a"), ("collation-b", "b")):
        page.wait_for_function(
            "([w, sfx]) => { const id = window.viewer.store.getState().windows[w].selectedAnnotationId;"
            " return !!id && id.endsWith(sfx); }",
            arg=[window_id, f"/display/{link}-{side}"],
            timeout=TIMEOUT_MS,
        )
        item = mirador_window(page, window_id).locator(f'li[annotationid$="/display/{link}-{side}"]')
        item.first.wait_for(timeout=TIMEOUT_MS)  # the panel lists it once React has rendered the selection
        assert item.count() == 1


def region_label(served: Served, m: int, k: int) -> str:
    canvas = served.regions[m][k]["canvas"]
    return canvas.rsplit("/", 1)[-1] if m == 1 else canvas.rsplit("/", 1)[-1].split("_")[3]


# --------------------------------------------------------------------------------------------------
# Tests


def test_mirador4_shows_the_match_in_both_windows_and_confirm_stores_an_assessment(
    collation: Served, page: Any, screenshots: Path
) -> None:
    need_mirador("4.0.0")
    page.goto(f"{collation.url}/collations/{collation.cid}/view?pair=0,1")
    page.locator('#status[data-status="finished"]').wait_for(timeout=TIMEOUT_MS)
    rows = page.locator("#correspondences tr.row")
    rows.nth(REGIONS - 1).wait_for(timeout=TIMEOUT_MS)
    assert rows.count() == REGIONS
    # the page lists each illustration with its best candidates: the true partner first, cycle-consistent
    best = page.evaluate(
        "() => window.collationViewer.items.map(i => [i.source.index, i.candidates[0].index,"
        " i.candidates[0].cycle_consistent])"
    )
    assert sum(a == b and cycle for a, b, cycle in best) >= REGIONS - 1, best
    candidate = page.locator(f'.candidate[data-source="{PICK}"][data-target="{PICK}"]')
    assert candidate.get_attribute("data-cycle") == "true"
    # thumbnails load lazily: bring this one into view, then wait for its image rather than sampling it once
    thumb = candidate.locator("img.thumb")
    thumb.scroll_into_view_if_needed()
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=thumb.element_handle())

    # clicking the match points both windows at the matched canvases
    candidate.locator("img.thumb").click()
    link = f"0-1-{PICK}-{PICK}"
    p3_label, p2_label = region_label(collation, 1, PICK), region_label(collation, 0, PICK)
    shown_a = check_annotation_shown(
        page,
        "collation-a",
        collation.regions[0][PICK]["canvas"],
        link,
        "a",
        collation.regions[0][PICK]["xywh"],
        re.compile(rf"{re.escape(p3_label)}.*\(illustration {PICK + 1}\)"),
        CANVAS_SCALE,
    )
    shown_b = check_annotation_shown(
        page,
        "collation-b",
        collation.regions[1][PICK]["canvas"],
        link,
        "b",
        collation.regions[1][PICK]["xywh"],
        re.compile(rf"{re.escape(p2_label)}.*\(illustration {PICK + 1}\)"),
    )
    page.screenshot(path=str(screenshots / "viewer-mirador4-match.png"))

    # the page selects the match's display annotation in both windows (highlighted in the panel)
    assert_selected(page, link)

    # confirm: the assessment is stored, and the re-fetched ranking shows it
    before = requests.get(f"{collation.url}/collations/{collation.cid}/assessments", timeout=30).json()["items"]
    candidate.get_by_role("button", name="Confirm").click()
    page.locator(f'.candidate[data-source="{PICK}"][data-target="{PICK}"][data-assessment="confirmed"]').wait_for(
        timeout=TIMEOUT_MS
    )
    items = requests.get(f"{collation.url}/collations/{collation.cid}/assessments", timeout=30).json()["items"]
    assert len(items) == len(before) + 1
    assert {k: items[-1][k] for k in ("pair", "source", "target", "verdict")} == {
        "pair": [0, 1],
        "source": PICK,
        "target": PICK,
        "verdict": "confirmed",
    }
    assert page.locator("#message").inner_text().startswith("Exact copy: No. ")
    page.screenshot(path=str(screenshots / "viewer-mirador4-confirmed.png"))
    assert not page.errors, page.errors
    assert shown_a["box"] >= 0.9 and shown_b["box"] >= 0.9


def test_mirador3_shows_the_match_too(collation: Served, page: Any, screenshots: Path) -> None:
    """Mirador 3.4.3, opened from a correspondence id as the annotations' links would open it."""
    need_mirador("3.4.3")
    k = 7
    page.goto(f"{collation.url}/collations/{collation.cid}/view?link=0-1-{k}-{k}&mirador=3")
    page.locator('#status[data-status="finished"]').wait_for(timeout=TIMEOUT_MS)
    assert page.evaluate("() => window.collationViewer.config.mirador.version") == "3.4.3"
    page.wait_for_function("() => window.collationViewer.selected !== null", timeout=TIMEOUT_MS)
    assert page.evaluate("() => window.collationViewer.selected") == {"source": k, "target": k}
    p3_label, p2_label = region_label(collation, 1, k), region_label(collation, 0, k)
    link = f"0-1-{k}-{k}"
    check_annotation_shown(
        page,
        "collation-a",
        collation.regions[0][k]["canvas"],
        link,
        "a",
        collation.regions[0][k]["xywh"],
        re.compile(rf"{re.escape(p3_label)}.*\(illustration {k + 1}\)"),
        CANVAS_SCALE,
    )
    check_annotation_shown(
        page,
        "collation-b",
        collation.regions[1][k]["canvas"],
        link,
        "b",
        collation.regions[1][k]["xywh"],
        re.compile(rf"{re.escape(p2_label)}.*\(illustration {k + 1}\)"),
    )
    assert_selected(page, link)
    page.screenshot(path=str(screenshots / "viewer-mirador3-link.png"))


def test_a_match_clicked_before_mirador_has_read_a_manifest_is_shown_when_it_arrives(
    collation: Served, page: Any
) -> None:
    """Mirador sets a window's starting canvas once the window's manifest arrives; a match clicked before
    that still ends on its canvases (a window whose manifest came late stayed on its first canvas)."""
    need_mirador("4.0.0")
    held: list[Any] = []
    # window b's manifest waits until after the click
    page.route("**/view/manifests/1", lambda route: held.append(route))
    page.goto(f"{collation.url}/collations/{collation.cid}/view?pair=0,1")
    page.wait_for_function("() => !!window.viewer && Object.keys(window.viewer.store.getState().windows).length === 2")
    first = page.evaluate("() => Object.values(window.viewer.store.getState().windows).map(w => w.canvasId)")
    k = next(
        k
        for k in range(REGIONS)
        if collation.regions[0][k]["canvas"] not in first and collation.regions[1][k]["canvas"] not in first
    )
    candidate = page.locator(f'.candidate[data-source="{k}"][data-target="{k}"]')
    candidate.wait_for(timeout=TIMEOUT_MS)
    for _ in range(TIMEOUT_MS // 20):  # Playwright hands the request to the route between its own calls
        if held:
            break
        page.wait_for_timeout(20)
    assert held, "Mirador never asked for window b's manifest"
    candidate.locator("img.thumb").click()
    assert page.evaluate("(b) => !window.viewer.store.getState().manifests[b]", held[0].request.url)
    held[0].continue_()
    wanted = [collation.regions[0][k]["canvas"], collation.regions[1][k]["canvas"]]
    page.wait_for_function(
        "([a, b]) => { const w = window.viewer.store.getState().windows;"
        " return w['collation-a'].canvasId === a && w['collation-b'].canvasId === b; }",
        arg=wanted,
        timeout=TIMEOUT_MS,
    )
    assert_selected(page, f"0-1-{k}-{k}")
    assert not page.errors, page.errors


def test_a_content_state_link_opens_both_regions_in_mirador4(collation: Served, page: Any, screenshots: Path) -> None:
    """The IIIF Content State link of a correspondence (its ``share``, as the JSON gives it), opened in
    the service's own Mirador 4 page: both windows on the two canvases, both regions listed, drawn and
    selected; the page's "Share this view" gives the same link back."""
    need_mirador("4.0.0")
    k = 5
    doc = requests.get(f"{collation.url}/collations/{collation.cid}/correspondences?pair=0,1&top=3", timeout=30).json()
    candidate = next(c for c in doc["items"][k]["candidates"] if c["index"] == k)
    share = candidate["share"]
    assert share == f"{collation.url}/collations/{collation.cid}/view?iiif-content={candidate['iiif_content']}"
    targets = read_targets(decode(candidate["iiif_content"]))
    assert [(t.canvas, list(t.xywh or ())) for t in targets] == [
        (collation.regions[m][k]["canvas"], [int(v) for v in collation.regions[m][k]["xywh"]]) for m in (0, 1)
    ]
    page.goto(share)
    page.locator('#status[data-status="finished"]').wait_for(timeout=TIMEOUT_MS)
    page.wait_for_function("() => window.collationViewer.selected !== null", timeout=TIMEOUT_MS)
    assert page.evaluate("() => window.collationViewer.selected") == {"source": k, "target": k}
    link = f"0-1-{k}-{k}"
    for window_id, m, side, scale in (("collation-a", 0, "a", CANVAS_SCALE), ("collation-b", 1, "b", 1)):
        label = region_label(collation, 1 - m, k)
        shown = check_annotation_shown(
            page,
            window_id,
            collation.regions[m][k]["canvas"],
            link,
            side,
            collation.regions[m][k]["xywh"],
            re.compile(rf"{re.escape(label)}.*\(illustration {k}\)"),
            scale,
        )
        assert shown["box"] >= 0.9, shown
    assert_selected(page, link)
    page.screenshot(path=str(screenshots / "viewer-mirador4-content-state.png"))

    page.get_by_role("button", name="Share this view").click()
    assert page.locator("#share-link").input_value() == share
    assert not page.errors, page.errors
    one = requests.get(
        share.split("iiif-content=")[0] + "iiif-content=" + encode(targets_json(targets[:1])), timeout=30
    )
    assert one.status_code == 400 and one.json()["field"] == "iiif-content"


def targets_json(targets: list[Any]) -> dict[str, Any]:
    """The content state of these ``RegionTarget`` values (one target: not a comparison view)."""
    return build_content_state([(t.canvas, t.xywh, t.manifest) for t in targets])


def presentation_2_of(manifest: dict[str, Any], manifest_id: str, lists: str) -> dict[str, Any]:
    """A Presentation 2.1 manifest of the same canvases as a 3.0 ``manifest`` (as libraries that serve
    both versions publish), each canvas's ``otherContent`` the service's AnnotationList (``lists/{n}``)."""
    canvases = []
    for n, canvas in enumerate(manifest["items"], start=1):
        body = canvas["items"][0]["items"][0]["body"]
        service = body["service"][0] if isinstance(body.get("service"), list) else body.get("service")
        other = [{"@id": f"{lists}/{n}", "@type": "sc:AnnotationList"}]
        canvases.append(
            v2_canvas(
                canvas["id"],
                (canvas["width"], canvas["height"]),
                service=service,
                image_url=body["id"],
                other_content=other,
                label=f"canvas {n}",
            )
        )
    return v2_manifest(manifest_id, canvases, "P3 (Presentation 2.1)")


def test_mirador3_shows_the_presentation_2_lists_as_it_shows_the_pages(
    collation: Served, site: Any, page: Any, screenshots: Path
) -> None:
    """Mirador 3.4.3 on a 2.1 manifest of P3's canvases whose ``otherContent`` is the service's
    AnnotationLists (``lists/1/{n}``): the list of the canvas is fetched, its annotation listed in the
    window's panel and its box drawn, as the 3.0 page's is in the collation's own window."""
    need_mirador("3.4.3")
    k, shown = 7, 2  # the page opens on match k; the 2.1 window shows match `shown`, on another canvas
    canvas = collation.regions[1][shown]["canvas"]
    assert canvas != collation.regions[1][k]["canvas"]  # so that only the list brings its annotations
    base = f"{collation.url}/collations/{collation.cid}"
    derived = requests.get(f"{base}/manifests/1", timeout=30).json()
    path = "/physiologus/P3/manifest-2.1.json"
    url = f"{site.url}{path}"
    body = json.dumps(presentation_2_of(derived, url, f"{base}/lists/1")).encode()
    cors = {"Content-Type": "application/json", "Access-Control-Allow-Origin": "*"}  # read by the page's Mirador
    site.routes[path] = lambda _handler: (200, cors, body)
    number = next(n for n, c in enumerate(derived["items"], start=1) if c["id"] == canvas)
    listed = requests.get(f"{base}/lists/1/{number}", timeout=30).json()
    v3 = requests.get(f"{base}/pages/1/{number}", timeout=30).json()
    assert [a["@id"] for a in listed["resources"]] == [a["id"] for a in v3["items"]]

    page.goto(f"{base}/view?link=0-1-{k}-{k}&mirador=3")
    page.locator('#status[data-status="finished"]').wait_for(timeout=TIMEOUT_MS)
    page.wait_for_function("() => !!window.viewer", timeout=TIMEOUT_MS)
    page.evaluate(
        "([m, c]) => window.viewer.store.dispatch(window.Mirador.actions.addWindow("
        "{id: 'p2-lists', manifestId: m, canvasId: c}))",
        [url, canvas],
    )
    try:
        page.wait_for_function(
            "([c, l]) => { const a = window.viewer.store.getState().annotations[c] || {};"
            " return !!a[l] && !!a[l].json; }",
            arg=[canvas, listed["@id"]],
            timeout=TIMEOUT_MS,
        )
    except Exception as exc:
        state = page.evaluate(
            "() => { const s = window.viewer.store.getState(); return {w: s.windows['p2-lists'],"
            " m: Object.fromEntries(Object.entries(s.manifests).map(([k, v]) => [k, v.error || !!v.json])),"
            " a: Object.fromEntries(Object.entries(s.annotations).map(([k, v]) => [k, Object.keys(v)]))}; }"
        )
        raise AssertionError(f"the list was not loaded: {state}; errors {page.errors}") from exc
    label = region_label(collation, 0, shown)
    result = check_annotation_shown(
        page,
        "p2-lists",
        canvas,
        f"0-1-{shown}-{shown}",
        "b",
        collation.regions[1][shown]["xywh"],
        re.compile(rf"{re.escape(label)}.*\(illustration {shown}\)"),
    )
    pages = page.evaluate("([c]) => Object.keys(window.viewer.store.getState().annotations[c] || {})", [canvas])
    assert pages == [listed["@id"]]  # what the window shows came from the 2.1 list alone
    page.screenshot(path=str(screenshots / "viewer-mirador3-p2-lists.png"))
    assert result["box"] >= 0.9 and not page.errors, (result, page.errors)


def test_a_mirrored_match_is_marked(
    served: Served, synthetic: Any, mirrored: str, page: Any, screenshots: Path
) -> None:
    """A manuscript against its mirrored copy (option transpositions): each best candidate carries the
    "mirrored copy" mark, and Mirador lists the annotation that says so."""
    need_mirador("4.0.0")
    body = {"manifests": [synthetic.a, mirrored], "options": {"transpositions": "mirror"}}
    r = requests.post(f"{served.url}/collations", json=body, timeout=30)
    assert r.status_code == 202, r.text
    cid = r.json()["id"]
    run_worker(served.settings)
    assert served.status(cid)["status"] == "finished"
    page.goto(f"{served.url}/collations/{cid}/view?pair=0,1")
    page.locator('#status[data-status="finished"]').wait_for(timeout=TIMEOUT_MS)
    page.locator("#correspondences tr.row").nth(synthetic.n - 1).wait_for(timeout=TIMEOUT_MS)
    for k in range(synthetic.n):
        best = page.locator(f'.candidate[data-source="{k}"][data-rank="1"]')
        assert best.get_attribute("data-target") == str(k) and best.get_attribute("data-transposition") == "mirror"
        assert best.locator(".badge.transposed").inner_text() == "⇆ mirrored copy"
    assert page.locator('.candidate[data-transposition="identity"] .badge.transposed').count() == 0
    mirador_window(page, "collation-a").get_by_text(re.compile("mirrored copy")).first.wait_for(timeout=TIMEOUT_MS)
    page.screenshot(path=str(screenshots / "viewer-mirrored-copy.png"))
    assert not page.errors, page.errors


def test_progress_updates_without_reload(served: Served, collation: Served, page: Any, screenshots: Path) -> None:
    """A second collation of the same regions (other normalization) runs while the page is open."""
    cid = served.submit({"normalization": "avg"})
    assert cid != collation.cid
    page.goto(f"{served.url}/collations/{cid}/view")
    page.locator('#status[data-status="queued"]').wait_for(timeout=TIMEOUT_MS)
    assert page.locator("#progress").is_visible()
    page.evaluate("() => { window.__notReloaded = true; }")
    page.screenshot(path=str(screenshots / "viewer-progress-queued.png"))
    run_worker(served.settings)
    page.locator('#status[data-status="finished"]').wait_for(timeout=TIMEOUT_MS)
    page.locator("#correspondences tr.row").first.wait_for(timeout=TIMEOUT_MS)
    assert page.evaluate("() => window.__notReloaded === true")
    assert not page.locator("#progress").is_visible()


def test_matrix_of_p2_p3_shows_the_diagonal(collation: Served, screenshots: Path) -> None:
    # the ground truth of the 15 usable pairs, as an upload would store it (beside the results)
    from collation.store.folder import FolderStore

    truth = json.loads(
        (
            Path(
                os.environ.get(
                    "COLLATION_TEST_DATA", Path(__file__).resolve().parents[3] / "shared" / "data" / "physiologus"
                )
            )
            / "ground_truth"
            / "P2-P3.json"
        ).read_text()
    )
    truth = [pair for pair in truth if pair[0] < REGIONS and pair[1] < REGIONS]
    path = FolderStore(collation.settings.data_dir).collation_dir(collation.cid) / "ground_truth" / "0-1.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(truth))

    started = time.monotonic()
    r = requests.get(f"{collation.url}/collations/{collation.cid}/matrix.png?pair=0,1&score=normalized", timeout=30)
    assert r.status_code == 200 and r.headers["Content-Type"] == "image/png"
    assert time.monotonic() - started < 5
    (screenshots / "matrix-P2-P3.png").write_bytes(r.content)
    image = Image.open(io.BytesIO(r.content)).convert("RGB")
    geometry = layout((REGIONS, REGIONS))
    assert image.size == geometry.size
    lum = np.asarray(image.convert("L"), dtype=np.float64)
    diagonal = [lum[geometry.center(k, k)[::-1]] for k in range(REGIONS)]
    off = [lum[geometry.center(i, j)[::-1]] for i in range(REGIONS) for j in range(REGIONS) if i != j]
    assert np.mean(diagonal) > np.mean(off) + 60, (np.mean(diagonal), np.mean(off))
    assert np.median(diagonal) > np.percentile(off, 95)
    for k in range(REGIONS):  # ground truth at every diagonal cell's corners
        assert image.getpixel(geometry.box(k, k)[:2]) == COLORS["ground_truth"], k
    outlined = sum(
        image.getpixel((geometry.box(k, k)[0] + geometry.cell // 2, geometry.box(k, k)[1])) == COLORS["two_cycles"]
        for k in range(REGIONS)
    )
    assert outlined >= REGIONS - 1  # the mutual best pairs are the true ones


def test_browser_is_not_needed_for_the_page(collation: Served) -> None:
    """The page and its data answer over HTTP (the part of the viewer that works without a browser)."""
    r = requests.get(f"{collation.url}/collations/{collation.cid}/view", timeout=30)
    assert r.status_code == 200 and "viewer.js" in r.text
    doc = requests.get(f"{collation.url}/collations/{collation.cid}/view.json?pair=1,0", timeout=30).json()
    assert doc["pair"] == [1, 0] and len(doc["regions"]["0"]) == len(doc["regions"]["1"]) == REGIONS
    thumb = doc["regions"]["1"]["0"]["thumbnail"]
    image = requests.get(thumb, timeout=30)
    assert image.content[:3] == b"\xff\xd8\xff"  # a JPEG, not iipsrv's HTML error page in a 200
