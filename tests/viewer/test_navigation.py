"""Every page links back to the workspace: the pair and concordance pages (under ``/api/v1/...``) carry
the same "Collations" and "New collation" links as the workspace's own pages (issue 29, item 8)."""

from __future__ import annotations

from typing import Any

import pytest
from test_viewer_routes import CID, finished_store, viewer_client  # noqa: F401 (fixtures)


@pytest.mark.parametrize(
    "page",
    ["/", "/new", f"/collations/{CID}", f"/api/v1/collations/{CID}/view", f"/api/v1/collations/{CID}/concordance/view"],
)
def test_every_page_links_to_the_collations_and_a_new_one(viewer_client: Any, page: str) -> None:  # noqa: F811
    html = viewer_client.get(page).get_data(as_text=True)
    assert '<nav aria-label="Workspace"' in html
    assert '<a href="/">Collations</a>' in html
    assert '<a href="/new">New collation</a>' in html
