"""Every page at a laptop's 1280 x 800 and a tablet's 820 x 1180 (issue 29, item 4): Home, New, Follow,
the pair page and the concordance of the finished P2-P3 collation load without a script error and none
is wider than the window (no sideways scrolling at 820). Screenshots of each go to
``$COLLATION_SCREENSHOT_DIR`` when it is set (the ``screenshots`` fixture of the viewer test), named
``page-<name>-<width>.png``.

The service, the collation and the page are tests/stack/conftest.py's fixtures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from viewer_service import TIMEOUT_MS, Served

pytestmark = pytest.mark.slow

SIZES = ({"width": 1280, "height": 800}, {"width": 820, "height": 1180})


def pages(collation: Served) -> list[tuple[str, str, str]]:
    """(name, URL, a selector present once the page has drawn what it reads from the API)."""
    root, cid = collation.url.removesuffix("/api/v1"), collation.cid
    return [
        ("home", f"{root}/", "tr.collation"),
        ("new", f"{root}/new", "#new-form"),
        ("follow", f"{root}/collations/{cid}", "#finish:not([hidden])"),
        ("pairs", f"{collation.url}/collations/{cid}/view?pair=0,1", "#correspondences .candidate"),
        ("concordance", f"{collation.url}/collations/{cid}/concordance/view", "#concordance tbody tr"),
    ]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: str(s["width"]))
def test_every_page_fits_the_window(collation: Served, page: Any, screenshots: Path, size: dict[str, int]) -> None:
    page.set_viewport_size(size)
    overflow = {}
    for name, url, ready in pages(collation):
        page.goto(url)
        page.locator(ready).first.wait_for(timeout=TIMEOUT_MS)
        page.wait_for_load_state("networkidle")
        page.screenshot(path=str(screenshots / f"page-{name}-{size['width']}.png"))
        overflow[name] = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert overflow == dict.fromkeys(overflow, 0), overflow  # no page scrolls sideways
    assert page.errors == [], page.errors
