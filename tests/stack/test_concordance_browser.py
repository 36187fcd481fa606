"""The concordance page in a real browser (Debian's Chromium driven by Playwright), served over a
loopback port from a three-witness collation written straight into a data store: a row per group,
a cell per witness, sorting by a witness, a verdict on a whole row, and a click that opens the
Mirador compare view on the illustration. Everything stays on 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from service_helpers import served_app
from test_concordance_api import CID, write_three_witnesses

from collation.app import create_app
from collation.core.settings import Settings

pytestmark = pytest.mark.slow

TIMEOUT_MS = 20_000


TOKEN = "s3cret"


@pytest.fixture(params=[()], ids=["open"])
def url(request: Any, tmp_path: Path) -> Iterator[str]:
    """The collation page's URL on a service that asks for the tokens ``request.param`` (none: open)."""
    store = write_three_witnesses(tmp_path / "data")
    app = create_app(Settings.from_env({}, data_dir=store.root, api_tokens=request.param), TESTING=True)
    with served_app(app) as root:
        yield f"{root}/api/v1/collations/{CID}"


def row_members(page: Any) -> list[list[str]]:
    return page.eval_on_selector_all(
        "#concordance tbody tr.group-row",
        """rows => rows.map(r =>
        Array.from(r.querySelectorAll('td.member')).map(td => td.dataset.manuscript === undefined ? '-'
            : td.dataset.manuscript + ':' + td.dataset.index))""",
    )


def test_concordance_page_lists_groups_sorts_and_takes_row_verdicts(page: Any, url: str) -> None:
    page.goto(f"{url}/concordance/view")
    page.wait_for_function(
        "() => window.collationConcordance && window.collationConcordance.loaded", timeout=TIMEOUT_MS
    )
    headers = page.eval_on_selector_all("#concordance thead th", "ths => ths.map(t => t.textContent)")
    assert headers == ["Group", "Codex A", "Codex B", "Codex C", "Verdict"]
    assert row_members(page) == [["0:0", "1:0", "-"]] + [[f"0:{k}", f"1:{k}", f"2:{k - 1}"] for k in range(1, 5)]
    thumb = page.get_attribute('td.member[data-manuscript="2"][data-index="0"] img', "src")
    assert thumb == "http://images.test/iiif/2-0/100,100,400,300/160,/0/default.jpg"
    assert "5 groups, 0 illustrations alone" in page.inner_text("#status")
    # each group's IIIF Content State link, as the concordance JSON gives it
    shares = page.evaluate("() => window.collationConcordance.doc.rows.map(r => r.share)")
    links = page.eval_on_selector_all("#concordance tbody tr.group-row a.share", "as => as.map(a => a.href)")
    assert links == shares and all("/view?iiif-content=" in link for link in links)

    page.select_option("#sort", "2")  # C's order: the group without C goes last
    page.wait_for_function(
        "() => document.querySelector('#concordance tbody tr').dataset.group !== '0-0'", timeout=TIMEOUT_MS
    )
    assert row_members(page)[-1] == ["0:0", "1:0", "-"]
    assert "sort=2" in page.get_attribute("#csv", "href")

    row = page.locator('#concordance tbody tr[data-group="0-0"]')
    row.locator("select").select_option("none")  # no match on the whole row: two illustrations alone
    row.get_by_role("button", name="Apply to row").click()
    page.wait_for_function("() => window.collationConcordance.doc.unmatched === 2", timeout=TIMEOUT_MS)
    assert page.locator("tr.group-row.alone").count() == 2
    # the confirmation sits in the table, next to the row judged (issue 29: not at the top of the page)
    page.locator("#concordance td.actions .row-message", has_text="1 verdicts stored").wait_for(timeout=TIMEOUT_MS)

    page.click('td.member[data-manuscript="1"][data-index="2"] a')  # Mirador on B2 and its partner
    page.wait_for_url("**/view?link=1-*", timeout=TIMEOUT_MS)
    assert "link=1-0-2-2" in page.url or "link=1-2-2-1" in page.url
    assert page.errors == []


@pytest.mark.parametrize("url", [(TOKEN,)], ids=["tokens"], indirect=True)
def test_a_verdict_without_a_token_asks_for_one_and_every_page_keeps_it(page: Any, url: str) -> None:
    """One module (static/common.js) keeps the token, sends it and says what a 401 means: the verdict
    refused, the token field opens and says so; with the token typed in, the verdict is stored; the
    token is still there on a reload and on the workspace's pages (one browser storage for all)."""
    page.goto(f"{url}/concordance/view")
    page.wait_for_function(
        "() => window.collationConcordance && window.collationConcordance.loaded", timeout=TIMEOUT_MS
    )
    assert not page.locator("details.token").evaluate("d => d.open")
    row = page.locator('#concordance tbody tr[data-group="0-0"]')
    row.locator("select").select_option("none")
    row.get_by_role("button", name="Apply to row").click()
    asked = page.locator("#message.error", has_text='This needs a token: enter yours under "Token"')
    asked.wait_for(timeout=TIMEOUT_MS)
    assert page.locator("details.token").evaluate("d => d.open")
    assert page.evaluate("document.activeElement.id") == "token"
    assert page.evaluate("window.collationConcordance.doc.unmatched") == 0

    page.locator("#token").fill(TOKEN)
    page.locator("#token").press("Tab")  # the change is kept
    requests: list[dict[str, str]] = []
    page.on("request", lambda r: requests.append(r.headers) if r.method == "POST" else None)
    row.get_by_role("button", name="Apply to row").click()
    page.wait_for_function("() => window.collationConcordance.doc.unmatched === 2", timeout=TIMEOUT_MS)
    # the confirmation sits in the table, next to the row judged (issue 29: not at the top of the page)
    page.locator("#concordance td.actions .row-message", has_text="1 verdicts stored").wait_for(timeout=TIMEOUT_MS)
    assert [h.get("authorization") for h in requests] == [f"Bearer {TOKEN}"]

    page.reload()
    assert page.locator("#token").input_value() == TOKEN
    page.goto(url.split("/api/v1/")[0] + "/")  # the workspace: the same token, its box closed
    assert page.locator("#token").input_value() == TOKEN
    assert not page.locator("#token-box").evaluate("d => d.open")
    assert page.errors == []
