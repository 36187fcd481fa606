"""The New collation page's work kept on the server (issue 39, item 6), in Chromium: Manuscript A and B
looked at, a detected box of B deleted in the region editor; after a reload the addresses, the preview
and the editor's boxes are back and Undo brings the box back (undo survives a reload); a colleague in
another browser (here: another page, local storage emptied) with the page's address finds the same boxes
and addresses. The box is selected with the keyboard alone (``]``, issue 39, item 11)."""

from __future__ import annotations

from typing import Any

import pytest
import test_region_editor_browser as editor_test
from redis import Redis

pytestmark = pytest.mark.slow


def saved(page: Any) -> None:
    """Until the page says its latest change is on the server (a draft is sent half a second after)."""
    page.wait_for_timeout(700)
    page.locator("#draft-status", has_text="Kept on the server").wait_for()


def test_a_reload_or_a_colleague_finds_the_addresses_the_boxes_and_the_undo(
    served: Any, synthetic: Any, page: Any, browser: Any
) -> None:
    editor_test.need_annotorious()
    Redis.from_url(served.settings.redis_url).flushdb()
    root = served.url.removesuffix("/api/v1")
    page.set_viewport_size({"width": 1280, "height": 800})
    page.set_default_timeout(editor_test.TIMEOUT_MS)
    card = editor_test.open_editor(page, root, synthetic)
    editor_test.wait_boxes(page, 4)
    detected = editor_test.shown(page)
    page.keyboard.press("]")  # keyboard only (issue 39, item 11): the first box, then the second
    page.keyboard.press("]")
    assert "4 illustration(s), 1 selected" in card.locator(".review-status").inner_text()
    page.keyboard.press("Delete")
    editor_test.wait_boxes(page, 3)
    saved(page)
    address = page.url
    assert "?draft=" in address

    page.evaluate("localStorage.clear()")  # what this browser kept is gone: the server's draft is what counts
    page.reload()
    page.wait_for_function("() => document.querySelectorAll('#preview .witness h3').length === 2")
    assert page.get_by_label("Manifest addresses").input_value().split() == [synthetic.a, synthetic.b]
    card = page.locator("#preview .witness").filter(has_text="Manuscript B")
    card.get_by_role("button", name="Review the regions on the pages").click()
    editor_test.wait_boxes(page, 3)
    assert card.locator(".review-draft").is_visible()
    card.get_by_role("button", name="Undo").click()  # the history came back with the draft
    editor_test.wait_boxes(page, 4)
    assert editor_test.shown(page) == detected
    card.get_by_role("button", name="Redo").click()
    editor_test.wait_boxes(page, 3)
    card.get_by_role("button", name="Use these regions").click()
    assert "3 illustrations (reviewed by you" in card.locator(".summary").inner_text()
    assert card.locator(".thumbs > *").count() == 3  # the deleted box is gone from the card too
    saved(page)

    page.evaluate("localStorage.clear()")  # a colleague's browser: nothing of this work in its storage
    other = browser.new_page()
    try:
        other.set_default_timeout(editor_test.TIMEOUT_MS)
        other.goto(address)
        other.wait_for_function("() => document.querySelectorAll('#preview .witness h3').length === 2")
        theirs = other.locator("#preview .witness").filter(has_text="Manuscript B")
        assert "3 illustrations (reviewed by you" in theirs.locator(".summary").inner_text()
        assert other.get_by_label("Manifest addresses").input_value().split() == [synthetic.a, synthetic.b]
    finally:
        other.close()
    assert page.errors == []
