"""Weak matches in the pages, in a real browser (Debian's Chromium driven by Playwright), served over a
loopback port from the three-witness collation of test_weak_service (a weak cycle between A and B, and
blank pages in C): the plain-words marks of the pair page and of the concordance page."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from builders import hard_collation, weak_collation
from service_helpers import served_app

from collation.app import create_app
from collation.core.options import CollationOptions
from collation.core.settings import Settings

pytestmark = pytest.mark.slow

TIMEOUT_MS = 20_000

CID = "00112233445566bb"


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    store = weak_collation(tmp_path / "data", CollationOptions(), CID)
    app = create_app(Settings.from_env({}, data_dir=store.root), TESTING=True)
    with served_app(app) as root:
        yield f"{root}/api/v1/collations/{CID}"


def test_the_concordance_page_says_which_rows_had_only_a_weak_match(page: Any, url: str) -> None:
    page.goto(f"{url}/concordance/view")
    page.wait_for_function(
        "() => window.collationConcordance && window.collationConcordance.loaded", timeout=TIMEOUT_MS
    )
    assert page.locator("tr.group-row.weak").count() == 5
    assert page.locator("tr.group-row:not(.weak)").count() == 2
    assert page.locator('tr[data-group="0-1"] .weak').inner_text() == (
        "weak match left out: it scores as low as unrelated images"
    )
    assert "(5 of them with only a weak match, as little alike as unrelated images)" in page.inner_text("#status")
    assert page.errors == []


def test_the_pair_page_marks_weak_candidates_in_plain_words(page: Any, url: str) -> None:
    page.goto(f"{url}/view?pair=0,1")
    page.wait_for_function("() => document.querySelectorAll('.candidate').length >= 3", timeout=TIMEOUT_MS)
    weak = page.locator('.candidate[data-weak="true"][data-source="1"][data-target="1"] .badge.weak')
    assert weak.inner_text() == "weak: as little alike as unrelated images"
    assert page.locator('.candidate[data-source="0"][data-target="2"]').get_attribute("data-weak") == "false"
    assert page.locator('.candidate[data-source="0"][data-target="2"] .badge.weak').count() == 0
    page.goto(f"{url}/view?pair=0,2")
    page.wait_for_function("() => document.querySelectorAll('.candidate').length >= 3", timeout=TIMEOUT_MS)
    assert page.locator(".candidate .badge.weak").first.inner_text() == "weak: a blank region, nothing drawn to match"
    assert page.errors == []


def test_a_hard_copy_kept_by_the_learned_floor_is_not_called_hardly_alike(page: Any, tmp_path: Path) -> None:
    """Raw S 0.35, under the fixed floor, but far above its rows' unrelated pairs: the learned floor keeps it,
    and the page says so in its words (no weak badge, not "Hardly alike", the scale of the learned rule)."""
    store = hard_collation(tmp_path / "hard", CollationOptions(), CID)
    with served_app(create_app(Settings.from_env({}, data_dir=store.root), TESTING=True)) as root:
        page.goto(f"{root}/api/v1/collations/{CID}/view?pair=0,1")
        page.wait_for_function("() => document.querySelectorAll('.candidate').length >= 8", timeout=TIMEOUT_MS)
        best = page.locator('.candidate[data-source="0"][data-target="0"]')
        assert best.get_attribute("data-weak") == "false" and best.locator(".badge.weak").count() == 0
        assert best.locator(".likeness").inner_text() == "Somewhat alike"
        details = best.locator("details.scores").text_content()
        assert "learned from what this collation" in details and "under 0.50" not in details
    assert page.errors == []
