"""A collation's name and the retry of a failed one in the workspace (issue 29, item 8), in Chromium on a
service with Redis and no workers: Home lists collations by name and offers Retry and Delete on a failed
one; Follow is titled by the name, renames it (the Rename button's prompt, PATCH) and retries a failed
collation, which is then queued again under the same id."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from builders import record
from service_helpers import served_app

from collation.app import create_app
from collation.core.settings import Settings
from collation.service.state import service_state
from collation.store.stored import PreparedManuscript

pytestmark = pytest.mark.slow


FAILED, NAMED = "fedcba9876543210", "0123456789abcdef"


@pytest.fixture
def root(tmp_path: Path, redis_url: str) -> Iterator[str]:
    """The service's root URL, with a failed collation (its witnesses read, labelled) and a named one."""
    settings = Settings.from_env(
        {}, data_dir=tmp_path / "data", allowed_hosts=("127.0.0.1",), sweep_interval=0, redis_url=redis_url
    )
    app = create_app(settings, TESTING=True)
    store = service_state(app).runtime.store
    store.create_collation(record(status="failed", cid=FAILED, errors=[{"message": "The worker stopped."}]))
    for m, label in enumerate(("P2 Ott.gr.354", "P3 Marc.gr.IV.35")):
        store.save_manuscript(FAILED, PreparedManuscript(m, f"https://x/{m}.json", label=label))
    store.create_collation(record(status="queued", cid=NAMED, name="Bestiaries of Venice"))
    with served_app(app) as url:
        yield url


def test_home_lists_names_and_offers_retry_and_delete_on_a_failed_collation(page: Any, root: str) -> None:
    page.goto(f"{root}/")
    page.locator("tr.collation").nth(1).wait_for()
    rows = {row.locator("td").nth(1).inner_text(): row for row in page.locator("tr.collation").all()}
    assert set(rows) == {"P2 Ott.gr.354 \u00b7 P3 Marc.gr.IV.35", "Bestiaries of Venice"}
    failed = rows["P2 Ott.gr.354 \u00b7 P3 Marc.gr.IV.35"]
    assert failed.locator("button").all_inner_texts() == ["Retry", "Rename", "Delete"]
    assert rows["Bestiaries of Venice"].locator("button").all_inner_texts() == ["Rename", "Delete"]
    failed.locator("button.retry").click()
    page.locator("tr.collation", has_text="waiting").nth(1).wait_for()  # both queued now, the list redrawn
    assert page.locator("tr.collation button.retry").count() == 0
    assert page.errors == []


def test_follow_is_titled_by_the_name_renames_and_retries(page: Any, root: str) -> None:
    page.goto(f"{root}/collations/{FAILED}")
    page.locator("#state", has_text="Failed.").wait_for()
    assert page.locator("#title").inner_text() == "P2 Ott.gr.354 \u00b7 P3 Marc.gr.IV.35"
    assert page.locator("#retry").is_visible() and page.locator("#delete").inner_text() == "Delete this collation"
    page.locator("#rename").click()  # renamed in place (issue 39, item 11), no prompt
    page.get_by_label("New name of the collation").fill("  Physiologus, two witnesses ")
    page.get_by_label("New name of the collation").press("Enter")
    page.locator("#title", has_text="Physiologus, two witnesses").wait_for()
    assert page.title() == "Physiologus, two witnesses \u2014 Image collation"
    page.locator("#rename").click()
    page.get_by_label("New name of the collation").fill("   ")  # a blank name: the problem, in words
    page.get_by_role("button", name="Save").click()
    page.locator("#message.error", has_text="name").wait_for()
    page.get_by_label("New name of the collation").press("Escape")
    assert page.locator("#title").inner_text() == "Physiologus, two witnesses"
    page.locator("#retry").click()
    page.locator("#state", has_text="Waiting for a free worker").wait_for()
    assert not page.locator("#retry").is_visible()
    page.reload()  # the name and the new status are the server's
    page.locator("#state", has_text="Waiting for a free worker").wait_for()
    assert page.locator("#title").inner_text() == "Physiologus, two witnesses"
    assert page.url.endswith(f"/collations/{FAILED}")
    assert page.errors == []
