"""The review flow in Chromium, on the real service (issue 29, items 4, 9 and 10): on the pair page the
n/p keys step through illustrations, a verdict carries the reviewer's name (kept across a reload) and a
note and moves on to the next illustration, the reviewed count follows, a verdict can be cleared; on the
concordance page the verdict menu starts on "choose…". No request of either page answers 4xx or 5xx.

The service, the P2-P3 collation and the page come from test_viewer_browser's fixtures."""

from __future__ import annotations

import re
from typing import Any

import pytest
import requests
from viewer_service import TIMEOUT_MS, Served

# the fixtures: the service, its finished P2-P3 collation (computed once a session) and a Chromium page

pytestmark = pytest.mark.slow

REVIEWER = "Marie Lenoir"
ROW = 6  # the illustration judged here: no other browser test judges it


def failed_requests(page: Any) -> list[str]:
    """Every response of the page with a 4xx or 5xx status, as "status URL", collected from now on."""
    failed: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    return failed


def reviewed(page: Any) -> tuple[int, int]:
    done, total = re.fullmatch(
        r"(\d+) of (\d+) illustrations reviewed", page.locator("#reviewed").inner_text()
    ).groups()
    return int(done), int(total)


def selected_row(page: Any) -> int:
    return int(page.locator("#correspondences tr.row.selected").get_attribute("data-source"))


def open_pair_page(page: Any, collation: Served) -> None:
    page.goto(f"{collation.url}/collations/{collation.cid}/view?pair=0,1")
    page.locator('#status[data-status="finished"]').wait_for(timeout=TIMEOUT_MS)
    page.locator("#correspondences tr.row.selected").wait_for(timeout=TIMEOUT_MS)


def test_review_flow_on_the_pair_page(collation: Served, page: Any) -> None:
    failed = failed_requests(page)
    open_pair_page(page, collation)
    first = selected_row(page)
    page.keyboard.press("n")  # the next illustration, not the next of its candidates
    assert selected_row(page) == first + 1
    page.keyboard.press("p")
    assert selected_row(page) == first

    page.locator("#reviewer").fill(REVIEWER)
    page.locator("#reviewer").press("Tab")  # change: remembered in this browser
    page.locator("#note").fill("same composition, mirrored")
    done, total = reviewed(page)
    candidate = page.locator(f'.candidate[data-source="{ROW}"]').first
    target = int(candidate.get_attribute("data-target"))
    candidate.locator("img.thumb").click()
    candidate.get_by_role("button", name="Confirm").click()
    judged = f'.candidate[data-source="{ROW}"][data-target="{target}"]'
    page.locator(judged + '[data-assessment="confirmed"]').wait_for(timeout=TIMEOUT_MS)
    # the review moves on to the next illustration, and the count follows
    page.wait_for_function(
        f"() => document.querySelector('#correspondences tr.row.selected').dataset.source === '{ROW + 1}'"
    )
    assert reviewed(page) == (done + 1, total)
    assert page.locator("#note").input_value() == ""  # a note goes with one verdict only
    assert page.locator("#message").is_visible() and page.locator("#message").inner_text().startswith(
        f"Exact copy: No. {ROW + 1} of "
    )

    items = requests.get(f"{collation.url}/collations/{collation.cid}/assessments", timeout=30).json()["items"]
    last = items[-1]
    assert (last["source"], last["target"], last["creator"], last["note"]) == (
        ROW,
        target,
        REVIEWER,
        "same composition, mirrored",
    )
    assert last["annotation"]["creator"] == {"type": "Person", "name": REVIEWER}  # not "anonymous expert"

    # the name is kept across a reload; the verdict can be cleared
    open_pair_page(page, collation)
    assert page.locator("#reviewer").input_value() == REVIEWER
    page.locator(judged).get_by_role("button", name="Clear").click()
    page.locator(judged + '[data-assessment=""]').wait_for(timeout=TIMEOUT_MS)
    assert reviewed(page) == (done, total)
    items = requests.get(f"{collation.url}/collations/{collation.cid}/assessments", timeout=30).json()["items"]
    assert not [i for i in items if {i["source"], i["target"]} == {ROW, target} and i["source"] == ROW]
    assert failed == [] and not page.errors, (failed, page.errors)


def test_the_concordance_menu_chooses_nothing_until_asked(collation: Served, page: Any) -> None:
    failed = failed_requests(page)
    page.goto(f"{collation.url}/collations/{collation.cid}/concordance/view")
    menus = page.locator("#concordance select")
    menus.first.wait_for(timeout=TIMEOUT_MS)
    values = menus.evaluate_all("nodes => nodes.map(n => n.value)")
    assert values and set(values) == {""}  # no row looks judged
    row = page.locator("#concordance tr.group-row").filter(has=page.locator("select")).first
    group = row.get_attribute("data-group")
    assert row.get_by_role("button", name="Apply to row").is_disabled()
    row.locator("select").select_option("partial")
    row.get_by_role("button", name="Apply to row").click()
    # the confirmation appears in the row judged, and the verdict is shown in words, not grey figures
    again = page.locator(f'#concordance tr[data-group="{group}"]')
    again.locator(".row-message").wait_for(timeout=TIMEOUT_MS)
    assert again.locator(".verdict-shown").count() >= 2
    assert failed == [] and not page.errors, (failed, page.errors)
