"""``GET /collations/{id}/lists/{m}/{n}``: each canvas's page as a Presentation 2.1 AnnotationList, for
a 3.0 manuscript too, with the page's annotations (the same ids); what is not a canvas is a 404."""

from __future__ import annotations

from typing import Any

from test_concordance_api import API
from test_content_state_links import finished_api  # noqa: F401  (the fixture: a finished collation of 3.0 manifests)


def test_every_page_has_its_list(finished_api: Any) -> None:  # noqa: F811
    for m, canvases in ((0, 5), (2, 4)):
        for n in range(1, canvases + 1):
            page = finished_api.get(f"{API}/pages/{m}/{n}").get_json()
            listed = finished_api.get(f"{API}/lists/{m}/{n}")
            doc = listed.get_json()
            assert listed.headers["Content-Type"].startswith("application/ld+json")
            assert doc["@type"] == "sc:AnnotationList" and doc["@id"].endswith(f"{API}/lists/{m}/{n}")
            assert [a["@id"] for a in doc["resources"]] == [a["id"] for a in page["items"]] != []
            assert all(a["on"]["full"] == page["items"][0]["target"]["source"]["id"] for a in doc["resources"])
    assert finished_api.get(f"{API}/lists/0/99").status_code == 404
    assert finished_api.get(f"{API}/lists/7/1").status_code == 404
