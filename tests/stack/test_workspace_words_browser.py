"""The workspace, round three (issue 39), in Chromium on a service with no workers, over collations written
straight into a store (three witnesses of eight illustrations each, finished; a failed one whose second
witness answered 404):

- every collation can be deleted from Home and Follow, finished ones included, after a question that names
  it; the buttons are the same in every state; a rename happens in place, on Home too (items 2 and 11);
- the pair page counts illustrations from 1 and shows no statistic outside "details", Mirador's annotation
  panel included; the verdict's confirmation speaks words (items 4 and 5);
- at 1280 x 800 the pair page shows Mirador beside at least five rows of the list with their verdict
  buttons, the confirmation covering none, and a grid of one illustration's candidates with thumbnails
  (item 3); the concordance fits 820 px (item 10);
- a failure says what to do and names the witness by its label (item 7).

Screenshots go to ``$COLLATION_SCREENSHOT_DIR`` when it is set.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from builders import finished_collation, prepared_manuscript, v3_canvas, v3_image_body, v3_manifest
from service_helpers import offline_page, page_picture, served_app
from test_viewer_browser import need_mirador

from collation.app import create_app
from collation.core.options import CollationOptions
from collation.core.settings import Settings
from collation.core.vocabulary import CollationStatus
from collation.store.folder import FolderStore
from collation.store.records import CollationRequest, new_record
from collation.store.stored import PreparedManuscript

pytestmark = pytest.mark.slow

FINISHED, FAILED = "00112233445566cc", "00112233445566dd"
LABELS = ("P2 Ott.gr.354", "P3 Marc.gr.IV.35", "P4 Bern 318")
N = 8
TIMEOUT_MS = 20_000
STATISTICS = re.compile(r"\d\.\d|\b(P_S|N_S|normali[sz]ed|propagated|mutual best|raw S|S below|score \d)\b")
"""What counts as a statistic in visible text: a decimal number, or the method's terms."""

VISIBLE_TEXT_OUTSIDE_DETAILS = """
(root) => {
  const out = [];
  const walk = (node) => {
    if (node.nodeType === Node.TEXT_NODE) { if (node.textContent.trim()) out.push(node.textContent.trim()); return; }
    if (node.nodeType !== Node.ELEMENT_NODE) return;
    const tag = node.tagName;
    if (tag === 'DETAILS' || tag === 'SCRIPT' || tag === 'STYLE' || tag === 'SELECT' || tag === 'TITLE') return;
    const style = getComputedStyle(node);
    if (style.display === 'none' || style.visibility === 'hidden') return;
    for (const child of node.childNodes) walk(child);
  };
  walk(root || document.body);
  return out;
}
"""


def manifest(m: int) -> dict[str, Any]:
    canvases = [
        v3_canvas(
            f"http://lib.test/{m}/canvas/{k}",
            (1000, 800),
            body=v3_image_body(f"http://img.test/{m}/{k}.jpg"),
            label=f"f. {k + 1}r",
        )
        for k in range(N)
    ]
    return v3_manifest(f"http://lib.test/{m}/manifest", canvases, LABELS[m])


def write_store(root: Path) -> FolderStore:
    """A finished collation of three witnesses whose illustration k corresponds across them, and a failed
    collation whose second witness could not be read."""
    scores = np.full((N, N), 0.2) + np.eye(N) * 1.19  # raw S: 1.39 on the diagonal, 0.2 elsewhere
    manuscripts = [(prepared_manuscript(m, N, label=LABELS[m]), manifest(m)) for m in range(3)]
    store = finished_collation(root, manuscripts, {(0, 1): scores, (0, 2): scores, (1, 2): scores}, cid=FINISHED)
    settings = Settings.from_env({}, backbone="efficientnet-lite0", chunk_pairs=8)
    broken = ["http://lib.test/0/manifest", "http://lib.test/W4.json"]
    request = CollationRequest.from_json({"manifests": broken, "regions": {}, "options": {}, "callback_url": None})
    failed = new_record(FAILED, request, CollationOptions(), settings)
    failed.status = CollationStatus.FAILED
    failed.errors = [{"message": "fewer than two manuscripts could be read (1 of 2)"}]
    store.create_collation(failed)
    store.save_manuscript(FAILED, prepared_manuscript(0, 1, label=LABELS[0]), manifest(0))
    error = {"message": "manifest http://lib.test/W4.json: HTTP 404"}
    store.save_manuscript(FAILED, PreparedManuscript(1, "http://lib.test/W4.json", label="", errors=(error,)))
    return store


@pytest.fixture
def root(tmp_path: Path, redis_url: str) -> Iterator[str]:
    store = write_store(tmp_path / "data")
    settings = Settings.from_env({}, data_dir=store.root, allowed_hosts=("127.0.0.1",), redis_url=redis_url)
    app = create_app(settings, TESTING=True)
    with served_app(app) as url:
        yield url


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A page of the session's browser; the made-up library's images are answered locally (a grey page)."""
    with offline_page(browser, "http://img.test/**", body=page_picture()) as page:
        page.set_viewport_size({"width": 1280, "height": 800})
        page.set_default_timeout(TIMEOUT_MS)
        yield page


def shot(page: Any, name: str) -> None:
    folder = os.environ.get("COLLATION_SCREENSHOT_DIR")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"round3-{name}.png"))


def statistics_shown(page: Any, selector: str = "body") -> list[str]:
    texts = page.eval_on_selector(selector, VISIBLE_TEXT_OUTSIDE_DETAILS)
    return [text for text in texts if STATISTICS.search(text)]


def test_the_pair_page_counts_from_1_speaks_words_and_shows_five_rows_beside_mirador(page: Any, root: str) -> None:
    need_mirador("4.0.0")
    page.goto(f"{root}/api/v1/collations/{FINISHED}/view?pair=0,1")
    page.wait_for_function(f"() => document.querySelectorAll('tr.row').length === {N}")
    first = page.locator('tr.row[data-source="0"]')
    assert first.locator("td.source").inner_text().startswith("No. 1 · f. 1r")  # item 5: counted from 1
    assert "No. 0" not in page.locator("#correspondences").inner_text()
    assert first.locator(".candidate .likeness").first.inner_text() == "Alike"  # raw S 1.39, in words
    # item 4: Mirador's annotation panel lists the match in words, no number and no score's name
    panel = page.locator('[id="collation-a"] li[annotationid]')
    panel.first.wait_for()
    shot(page, "pairs-1280")
    mirador = page.locator('[id="collation-a"]').inner_text()
    assert "each other’s best match" in mirador and "(illustration 1)" in mirador
    assert statistics_shown(page) == []  # the whole page, Mirador included, outside "details"
    # item 3: Mirador beside the list, at least five rows with their verdict buttons in view
    boxes = page.evaluate("""() => {
        const view = [window.innerWidth, window.innerHeight];
        const inView = (r) => r.top >= 0 && r.left >= 0 && r.bottom <= view[1] && r.right <= view[0];
        const rows = Array.from(document.querySelectorAll('tr.row')).filter(row =>
            inView(row.getBoundingClientRect()) &&
            Array.from(row.querySelectorAll('.candidate')).slice(0, 1).every(c =>
              Array.from(c.querySelectorAll('.actions button')).every(b => inView(b.getBoundingClientRect()))));
        const m = document.getElementById('mirador-pane').getBoundingClientRect();
        return {rows: rows.length, mirador: [m.left, m.right, m.top, m.bottom]};
    }""")
    assert boxes["rows"] >= 5, boxes
    assert boxes["mirador"][1] - boxes["mirador"][0] >= 500 and boxes["mirador"][3] - boxes["mirador"][2] >= 600
    # a verdict: the confirmation in words, counted from 1, covering no row
    first.locator(".candidate").first.get_by_role("button", name="Same subject").click()
    message = page.locator("#message")
    message.wait_for()
    page.locator('.candidate[data-source="0"][data-category="semantic"]').wait_for()
    assert message.inner_text() == (
        "Same subject (different composition): No. 1 of P2 Ott.gr.354 ↔ No. 1 of P3 Marc.gr.IV.35. Ranking updated."
    )
    covered = page.evaluate("""() => {
        const m = document.getElementById('message').getBoundingClientRect();
        return Array.from(document.querySelectorAll('tr.row')).filter(row => {
            const r = row.getBoundingClientRect();
            return r.bottom > m.top + 1 && r.top < m.bottom - 1 && r.right > m.left && r.left < m.right;
        }).length;
    }""")
    assert covered == 0
    shot(page, "pairs-verdict-1280")
    # a grid of one illustration's candidates, as AIKON shows a query's, with the same verdict buttons
    page.locator('tr.row[data-source="1"]').get_by_role("button", name="All candidates").click()
    grid = page.locator("#grid")
    grid.locator(".candidate").nth(N - 1).wait_for()
    assert grid.locator(".candidate").count() == N  # all 8 of P3, not the list's 3
    assert grid.locator("h2").inner_text() == "All candidates of No. 2 · f. 2r in P3 Marc.gr.IV.35"
    assert grid.locator(".candidate").first.locator("img.thumb, .nothumb").count() == 1
    assert statistics_shown(page, "#grid") == []
    target = int(grid.locator(".candidate").nth(3).get_attribute("data-target"))
    grid.locator(".candidate").nth(3).get_by_role("button", name="Reject").click()
    grid.locator(f'.candidate[data-target="{target}"][data-category="none"]').wait_for()
    assert message.inner_text().startswith(f"No match: No. 2 of P2 Ott.gr.354 ↔ No. {target + 1} of P3")
    shot(page, "pairs-grid-1280")
    page.set_viewport_size({"width": 820, "height": 1180})
    page.reload()  # on a portrait screen: Mirador above the list, its windows stacked
    page.locator('[id="collation-a"] li[annotationid]').first.wait_for()
    shot(page, "pairs-820")
    assert page.errors == []


def test_the_concordance_fits_820_px_counts_from_1_and_keeps_statistics_in_details(page: Any, root: str) -> None:
    page.set_viewport_size({"width": 820, "height": 1180})
    page.goto(f"{root}/api/v1/collations/{FINISHED}/concordance/view")
    page.wait_for_function("() => window.collationConcordance && window.collationConcordance.loaded")
    shot(page, "concordance-820")
    assert page.evaluate("document.documentElement.scrollWidth") <= 820
    cell = page.locator('td.member[data-manuscript="1"][data-index="0"]')
    assert cell.inner_text().startswith("No. 1 · f. 1r")
    assert statistics_shown(page) == []
    cell.locator("details summary").click()  # the confidence, with its scale, behind "details"
    assert "confidence 1.00 of 1" in cell.inner_text()
    page.set_viewport_size({"width": 1280, "height": 800})
    shot(page, "concordance-1280")
    assert page.errors == []


def test_every_collation_is_deleted_after_a_question_naming_it_and_renamed_in_place(page: Any, root: str) -> None:
    page.goto(f"{root}/")
    page.locator("tr.collation").nth(1).wait_for()
    shot(page, "home-1280")
    page.set_viewport_size({"width": 820, "height": 1180})
    shot(page, "home-820")
    assert page.evaluate("document.documentElement.scrollWidth") <= 820
    page.set_viewport_size({"width": 1280, "height": 800})
    finished = page.locator(f'tr.collation[data-id="{FINISHED}"]')
    assert finished.locator("button").all_inner_texts() == ["Rename", "Delete"]  # a finished one too
    finished.get_by_role("button", name="Rename").click()  # item 11: in place, on Home
    finished.get_by_label("New name of the collation").fill("Physiologus, three witnesses")
    finished.get_by_label("New name of the collation").press("Enter")
    page.locator("tr.collation td.name", has_text="Physiologus, three witnesses").wait_for()
    # item 7: the failed collation's Follow page says what to do, naming the witness
    page.evaluate(
        "localStorage.setItem('collation.labels', JSON.stringify({'http://lib.test/W4.json': 'W4 Bern 233'}))"
    )
    page.goto(f"{root}/collations/{FAILED}")
    page.locator("#state", has_text="Failed.").wait_for()
    problems = page.locator("#witnesses .problem").all_inner_texts()
    assert problems == [
        "The library’s server does not know this address for W4 Bern 233 (HTTP 404). Check its address in the "
        "library’s catalogue; once the library answers again, Retry. Or start a new collation without it.",
        "Only 1 of the 2 witnesses could be read, and a comparison needs two. See what went wrong with each "
        "witness above, then Retry, or start a new collation with other witnesses.",
    ]
    assert [b for b in page.locator("#delete, #retry").all_inner_texts()] == ["Delete this collation", "Retry"]
    shot(page, "follow-failed-1280")
    # item 2: Follow deletes a finished collation after a question that names it
    page.goto(f"{root}/collations/{FINISHED}")
    page.locator("#state", has_text="Finished.").wait_for()
    shot(page, "follow-finished-1280")
    page.set_viewport_size({"width": 820, "height": 1180})
    shot(page, "follow-finished-820")
    page.set_viewport_size({"width": 1280, "height": 800})
    asked: list[str] = []

    def answer(dialog: Any) -> None:
        asked.append(dialog.message)
        dialog.accept()

    page.once("dialog", answer)
    page.locator("#delete").click()
    page.wait_for_url(f"{root}/")
    assert asked and asked[0].startswith("Delete the collation “Physiologus, three witnesses”?")
    page.locator(f'tr.collation[data-id="{FAILED}"]').wait_for()
    assert page.locator(f'tr.collation[data-id="{FINISHED}"]').count() == 0
    assert page.request.get(f"{root}/api/v1/collations/{FINISHED}").status == 404
    # and from Home, the failed one, after the same question
    page.once("dialog", answer)
    page.locator(f'tr.collation[data-id="{FAILED}"]').get_by_role("button", name="Delete").click()
    page.locator("#empty").wait_for()
    assert asked[1].startswith("Delete the collation “P2 Ott.gr.354 · W4.json”?")
    assert page.errors == []
