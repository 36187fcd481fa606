"""The region editor of the New collation page (static/review.js over Annotorious) in a real browser:
Manuscript B (no region annotations, its 4 illustrations detected, one per 420 x 600 folio whose image
has the canvas's size, so the boxes' SVG coordinates are canvas coordinates) corrected with the mouse
and the keyboard: move, resize, undo and redo, delete, draw, merge, split at a clicked point, the draft
kept across a reload, and the started collation's request carrying the corrected regions.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from redis import Redis
from viewer_service import TIMEOUT_MS

from collation.viewer.pages import STATIC
from collation.viewer.workspace import WORKSPACE_SCRIPTS

pytestmark = pytest.mark.slow

CANVAS_W = 420  # the synthetic folios' width, in canvas (and image) pixels
DRAFT = "collation.regions-draft:"  # + the manifest URL: review.js's key in localStorage
SLACK = 2.5  # canvas pixels: a screen pixel is about 1.25 of them at this page's scale, plus rounding

BOXES = """() => [...document.querySelectorAll('.review-page')].flatMap(page =>
  [...page.querySelectorAll('.a9s-annotation')].map(g => {
    const r = g.querySelector('rect.a9s-inner');
    return {id: g.dataset.id, canvas: Number(page.dataset.canvas),
            xywh: ['x', 'y', 'width', 'height'].map(k => Math.round(Number(r.getAttribute(k))))};
  }))"""


def need_annotorious() -> None:
    """The editor's library is installed by scripts/setup.sh (from npm); without it the test skips."""
    if not any("annotorious" in name and (STATIC / name).is_file() for name in WORKSPACE_SCRIPTS):
        pytest.skip("Annotorious is not installed (scripts/setup.sh needs npm)")


def open_editor(page: Any, root: str, synthetic: Any) -> Any:
    """The New collation page with manuscripts A and B looked at and B's editor open, images loaded."""
    page.goto(f"{root}/new")
    page.get_by_label("Manifest addresses").fill("\n".join([synthetic.a, synthetic.b]))
    page.get_by_role("button", name="Look at these manifests").click()
    page.wait_for_function("() => document.querySelectorAll('#preview .witness h3').length === 2")
    card = page.locator("#preview .witness").filter(has_text="Manuscript B")
    card.get_by_role("button", name="Review the regions on the pages").click()
    page.wait_for_function(
        "() => document.querySelectorAll('.review-page img').length === 4 && [...document.querySelectorAll("
        "'.review-page img')].every(i => i.complete && i.naturalWidth) && document.querySelector('.a9s-annotation')"
    )
    return card


def wait_boxes(page: Any, n: int) -> None:
    """Until ``n`` boxes are drawn on the pages (each page's annotator starts when its image has loaded)."""
    page.wait_for_function("(n) => document.querySelectorAll('.a9s-annotation').length === n", arg=n)


def shown(page: Any) -> list[tuple[int, list[int]]]:
    """The boxes drawn on the pages (none selected: a selected one is drawn by Annotorious's editor)."""
    return sorted((b["canvas"], b["xywh"]) for b in page.evaluate(BOXES))


def draft(page: Any, manifest: str) -> Any:
    return page.evaluate("(key) => localStorage.getItem(key)", f"{DRAFT}{manifest}")


def boxes(page: Any, manifest: str, detected: list) -> list[tuple[int, list[int]]]:
    """The editor's boxes as its draft keeps them (canvas index, xywh), or ``detected`` without a draft."""
    stored = draft(page, manifest)
    if stored is None:
        return detected
    return sorted((int(r["canvas"].rsplit("/", 1)[1]), r["xywh"]) for r in json.loads(stored)["regions"])


def to_screen(page: Any, canvas: int, x: float, y: float) -> tuple[float, float, float]:
    """Canvas point -> (screen x, screen y, canvas pixels per screen pixel) on that page's image."""
    image = page.locator(f'.review-page[data-canvas="{canvas}"] img')
    image.scroll_into_view_if_needed()
    frame = image.bounding_box()
    per = CANVAS_W / frame["width"]
    return frame["x"] + x / per, frame["y"] + y / per, per


def drag(page: Any, start: tuple[float, float], end: tuple[float, float]) -> None:
    page.mouse.move(*start)
    page.mouse.down()
    page.mouse.move(*end, steps=8)
    page.mouse.up()
    page.wait_for_timeout(100)  # the editor reads Annotorious's store after the pointer is up


def click_box(page: Any, canvas: int, xywh: list[int], shift: bool = False) -> None:
    x, y, _ = to_screen(page, canvas, xywh[0] + xywh[2] / 2, xywh[1] + xywh[3] / 2)
    if shift:
        page.keyboard.down("Shift")
    page.mouse.click(x, y)
    if shift:
        page.keyboard.up("Shift")
    page.wait_for_timeout(100)


def near(got: list[int], want: list[float]) -> bool:
    return all(abs(g - w) <= SLACK for g, w in zip(got, want, strict=True))


def test_regions_are_moved_resized_merged_split_kept_and_sent(
    served: Any, synthetic: Any, page: Any, screenshots: Any
) -> None:
    need_annotorious()
    Redis.from_url(served.settings.redis_url).flushdb()
    root = served.url.removesuffix("/api/v1")
    page.set_viewport_size({"width": 1280, "height": 800})
    page.set_default_timeout(TIMEOUT_MS)
    failed: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    card = open_editor(page, root, synthetic)
    wait_boxes(page, 4)
    detected = shown(page)
    assert [c for c, _ in detected] == [0, 1, 2, 3] and draft(page, synthetic.b) is None

    def on_page(canvas: int) -> list[list[int]]:
        return [xywh for c, xywh in boxes(page, synthetic.b, detected) if c == canvas]

    status = card.locator(".review-status")

    # move: select with a click, drag its middle 40 x 24 screen pixels
    (first,) = on_page(0)
    click_box(page, 0, first)
    x, y, per = to_screen(page, 0, first[0] + first[2] / 2, first[1] + first[3] / 2)
    drag(page, (x, y), (x + 40, y + 24))
    (moved,) = on_page(0)
    assert near(moved, [first[0] + 40 * per, first[1] + 24 * per, first[2], first[3]]), (first, moved, per)

    # resize by the bottom-right corner handle, 30 x 20 screen pixels out
    cx, cy, _ = to_screen(page, 0, moved[0] + moved[2], moved[1] + moved[3])
    drag(page, (cx, cy), (cx + 30, cy + 20))
    (resized,) = on_page(0)
    assert near(resized, [moved[0], moved[1], moved[2] + 30 * per, moved[3] + 20 * per]), (moved, resized)

    # undo (Ctrl+Z) comes back to the moved box, again to the detected one; redo re-applies both
    page.keyboard.press("Control+z")
    assert on_page(0) == [moved]
    card.get_by_role("button", name="Undo").click()
    assert on_page(0) == [first]
    page.keyboard.press("Control+Shift+z")
    assert on_page(0) == [moved]
    page.keyboard.press("Control+y")
    assert on_page(0) == [resized]

    # delete after a mouse click (no Tab), with the key
    (second,) = on_page(1)
    click_box(page, 1, second)
    assert "1 selected" in status.inner_text()
    page.keyboard.press("Delete")
    assert on_page(1) == [] and len(boxes(page, synthetic.b, detected)) == 3

    # draw a box on page 2, then merge it with the detected one there: their bounding box
    (third,) = on_page(2)
    card.get_by_role("button", name="Draw a box").click()
    sx, sy, per = to_screen(page, 2, 300, 500)
    drag(page, (sx, sy), (sx + 60 / per, sy + 50 / per))
    drawn = [b for b in on_page(2) if b != third]
    assert len(drawn) == 1 and near(drawn[0], [300, 500, 60, 50]), drawn
    click_box(page, 2, third)
    click_box(page, 2, drawn[0], shift=True)
    assert "2 selected" in status.inner_text()
    card.get_by_role("button", name="Merge selected").click()
    left, top = min(third[0], drawn[0][0]), min(third[1], drawn[0][1])
    right = max(third[0] + third[2], drawn[0][0] + drawn[0][2])
    bottom = max(third[1] + third[3], drawn[0][1] + drawn[0][3])
    assert on_page(2) == [[left, top, right - left, bottom - top]]

    # split across where the user clicks: a third of the way down the box on page 3
    (fourth,) = on_page(3)
    click_box(page, 3, fourth)
    card.get_by_role("button", name="Split across").click()
    assert 0 <= card.locator(".review-tools").bounding_box()["y"] <= 2  # sticky: in reach at the 4th page
    cut = fourth[1] + fourth[3] // 3
    px, py, per = to_screen(page, 3, fourth[0] + fourth[2] / 2, cut)
    page.mouse.click(px, py)
    page.wait_for_timeout(100)
    page.screenshot(path=str(screenshots / "region-editor-split.png"))
    upper, lower = sorted(on_page(3), key=lambda b: b[1])
    assert upper[0] == lower[0] == fourth[0] and upper[2] == lower[2] == fourth[2]
    assert abs(upper[1] + upper[3] - cut) <= SLACK and lower[1] == upper[1] + upper[3]
    assert upper[3] + lower[3] == fourth[3] and upper[1] == fourth[1]

    # the draft is kept in this browser too: a fresh New page (no ?draft= address, the addresses pasted
    # again) finds it (test_workspace_draft_browser: the same page's address finds it on the server)
    before = boxes(page, synthetic.b, detected)
    assert len(before) == 4  # 4 detected - 1 deleted + 1 drawn - 1 merged + 1 split
    page.wait_for_timeout(700)  # the draft's own request to the server is sent before the page is left
    card = open_editor(page, root, synthetic)
    wait_boxes(page, 4)
    assert card.locator(".review-draft").is_visible() and "Draft restored" in card.locator(".review-draft").inner_text()
    assert shown(page) == before

    # used: the request carries exactly these regions, in canvas coordinates; the draft is gone
    card.get_by_role("button", name="Use these regions").click()
    assert "4 illustrations (reviewed by you" in card.locator(".summary").inner_text()
    assert draft(page, synthetic.b) is None

    # a later change, left as a draft and then discarded: back to the regions given to the editor
    card.get_by_role("button", name="Review the regions on the pages").click()
    wait_boxes(page, 4)
    click_box(page, 0, before[0][1])
    page.keyboard.press("Backspace")
    assert len(boxes(page, synthetic.b, before)) == 3
    card.get_by_role("button", name="Close").click()
    card.get_by_role("button", name="Review the regions on the pages").click()
    card.locator(".review-draft", has_text="Draft restored").wait_for()
    wait_boxes(page, 3)
    card.locator(".review-draft").get_by_role("button", name="Discard").click()
    assert shown(page) == before and draft(page, synthetic.b) is None
    assert card.locator(".review-draft").is_hidden()
    card.get_by_role("button", name="Use these regions").click()
    page.get_by_role("button", name="Start the collation").click()
    page.wait_for_url(re.compile(r"/collations/[0-9a-f]+$"))
    cid = page.url.rsplit("/", 1)[1]
    from collation.store.location import open_store

    given = open_store(served.settings).load_record(cid).request.regions["1"]
    canvases = [f"{synthetic.b.rsplit('/', 1)[0]}/canvas/{i}" for i in range(4)]
    assert sorted((canvases.index(r["canvas"]), r["xywh"]) for r in given) == [(c, list(x)) for c, x in before]
    assert failed == [] and page.errors == []
