"""Two guards of the workspace pages, in Debian's Chromium (issue 31, items 4 and 5).

- A IIIF Collection that lists itself, two that list each other, or a long chain of collections
  listed as manifests: the New collation page opens each collection once, a few at most, and looks
  at a bounded number of addresses, then says in words why it stopped. The ``GET /inspect`` requests
  the page makes are counted (unbounded, it made 60 to 85 a second without end).
- A page of another origin (the static site, another port) cannot frame the Follow page with its
  Cancel button: the pages answer ``frame-ancestors 'none'`` and ``X-Frame-Options: DENY``.

The service runs without Redis (``/inspect`` and the pages need none) on a loopback port; the
collections come from the loopback static site.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from builders import RECORD_ID, record
from service_helpers import served_app

from collation.app import create_app
from collation.core.settings import Settings
from collation.service.state import service_state

pytestmark = pytest.mark.slow


SETTLE_S = 1.0
"""Seconds the test keeps counting after the page's message: an unbounded page makes 60 to 85 more
requests in that time (3 s, some 200, proved nothing more and cost 10 s over the module's five tests)."""


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The service's root URL (pages at /, API at /api/v1), with a running collation to follow."""
    settings = Settings.from_env(
        {}, data_dir=tmp_path_factory.mktemp("guards") / "data", allowed_hosts=("127.0.0.1",), sweep_interval=0
    )
    app = create_app(settings, TESTING=True)
    service_state(app).runtime.store.create_collation(record(status="running"))
    with served_app(app) as root:
        yield f"{root}"


def v3_collection(url: str, members: list[str]) -> dict[str, Any]:
    items = [{"id": m, "type": "Manifest", "label": {"en": [m.rsplit("/", 1)[-1]]}} for m in members]
    return {
        "@context": "http://iiif.io/api/presentation/3/context.json",
        "id": url,
        "type": "Collection",
        "label": {"en": ["Looping collection"]},
        "items": items,
    }


def v2_collection(url: str, members: list[str]) -> dict[str, Any]:
    return {
        "@context": "http://iiif.io/api/presentation/2/context.json",
        "@id": url,
        "@type": "sc:Collection",
        "label": "Looping collection",
        "manifests": [{"@id": m, "@type": "sc:Manifest", "label": m.rsplit("/", 1)[-1]} for m in members],
    }


def write_collections(site: Any, name: str, members: dict[str, list[str]], version: int = 3) -> str:
    """Collections ``loops/{name}/{key}.json`` listing the ``members`` given by key (or as URLs);
    returns the URL of the first."""
    url = {key: f"{site.url}/loops/{name}/{key}.json" for key in members}
    build = v3_collection if version == 3 else v2_collection
    for key, listed in members.items():
        site.write_json(f"loops/{name}/{key}.json", build(url[key], [url.get(m, m) for m in listed]))
    return url[next(iter(members))]


def look(page: Any, root: str, addresses: list[str]) -> tuple[list[str], str]:
    """Pastes ``addresses`` on the New collation page, asks to look at them, waits for the page's
    message and ``SETTLE_S`` more; returns the ``GET /inspect`` URLs requested, and the message."""
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/api/v1/inspect?" in r.url else None)
    page.goto(f"{root}/new")
    page.get_by_label("Manifest addresses").fill("\n".join(addresses))
    page.get_by_role("button", name="Look at these manifests").click()
    page.locator("#message", has_text="IIIF Collection").wait_for(timeout=10_000)
    time.sleep(SETTLE_S)
    return asked, page.locator("#message").inner_text()


@pytest.mark.parametrize("version", [2, 3])
def test_a_collection_that_lists_itself_is_opened_once(page: Any, root: str, site: Any, version: int) -> None:
    url = write_collections(site, f"self{version}", {"self": ["self"]}, version)
    asked, said = look(page, root, [url])
    assert len(asked) == 1, f"{len(asked)} GET /inspect"
    assert "lists itself or a collection already opened" in said and "no manifest to add" in said, said
    assert page.get_by_label("Manifest addresses").input_value() == ""
    assert page.errors == []


def test_two_collections_that_list_each_other_are_opened_once_each(page: Any, root: str, site: Any) -> None:
    url = write_collections(site, "pair", {"a": ["b"], "b": ["a"]})
    asked, said = look(page, root, [url])
    assert [a.rsplit("%2F", 1)[1] for a in asked] == ["a.json", "b.json"]
    assert "lists itself or a collection already opened" in said, said


def test_the_manifests_beside_a_loop_are_still_looked_at(page: Any, root: str, site: Any, synthetic: Any) -> None:
    url = write_collections(site, "mixed", {"self": ["self", synthetic.a, synthetic.b]})
    asked, said = look(page, root, [url])
    assert len(asked) == 3, asked  # the collection once, then each manifest once
    assert "lists itself or a collection already opened" in said and "are now in the list" in said, said
    assert page.get_by_label("Manifest addresses").input_value().split() == [synthetic.a, synthetic.b]
    page.wait_for_function("() => document.querySelectorAll('#preview .witness h3').length === 2")
    assert "Manuscript A" in page.locator("#preview").inner_text()


def test_a_long_chain_of_collections_stops_after_a_few(page: Any, root: str, site: Any) -> None:
    chain = {f"c{k}": [f"c{k + 1}"] for k in range(12)}
    asked, said = look(page, root, [write_collections(site, "chain", chain)])
    time.sleep(1)
    assert len(asked) == 5, asked  # MAX_COLLECTIONS (4, workspace.js) opened, the fifth found and left
    assert "opened 4 collections" in said and "paste the addresses of manifests" in said.lower(), said


def test_another_origin_cannot_frame_the_follow_page(page: Any, root: str, site: Any) -> None:
    follow = f"{root}/collations/{RECORD_ID}"
    (site.root / "frame").mkdir(exist_ok=True)
    (site.root / "frame" / "follow.html").write_text(
        f'<!doctype html><title>framing</title><iframe id="f" src="{follow}" width="800" height="600"></iframe>'
    )
    page.goto(f"{site.url}/frame/follow.html")  # the static site: another port, another origin
    page.wait_for_load_state("load")
    time.sleep(1)
    child = page.frames[1]
    assert child.url != follow, "the Follow page was shown in a frame of another origin"
    assert child.locator("#delete").count() == 0
    assert any("frame-ancestors 'none'" in text for text in page.refused), page.refused  # Chromium says why
    page.refused.clear()  # the refusal the test expects (the page fixture fails a page on any other)
    page.goto(follow)  # the page itself still works
    page.locator("#witnesses li").first.wait_for()  # the first status is drawn
    assert page.locator("#delete").is_visible()
