"""The Follow page in words (issue 29, item 7), in Chromium on a service with no workers: a collation that
has not counted anything yet shows a moving (indeterminate) bar and its stage in words, its witnesses by
their place and host rather than their raw addresses; a failed one shows no bar and offers to delete it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import test_viewer_browser as viewer_test
from builders import record

from collation.app import create_app
from collation.core.settings import Settings
from collation.service.state import service_state

pytestmark = pytest.mark.slow

page = viewer_test.page  # the viewer test's page fixture (conftest's Chromium, page errors collected)

WAITING, FAILED = "0123456789abcdef", "fedcba9876543210"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The service's root URL, with a collation waiting for a worker and a failed one."""
    from werkzeug.serving import make_server

    settings = Settings.from_env(
        {}, data_dir=tmp_path_factory.mktemp("follow") / "data", allowed_hosts=("127.0.0.1",), sweep_interval=0
    )
    app = create_app(settings, TESTING=True)
    store = service_state(app).runtime.store
    store.create_collation(record(status="queued", cid=WAITING))
    store.create_collation(record(status="failed", cid=FAILED, errors=[{"message": "The worker stopped."}]))
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, name="follow-test-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
        service_state(app).close()


def test_a_collation_that_counted_nothing_yet_shows_words_and_a_moving_bar(page: Any, root: str) -> None:
    page.goto(f"{root}/collations/{WAITING}")
    page.locator("#witnesses li").first.wait_for()
    assert page.locator("#state").inner_text() == "Waiting for a free worker\u2026"
    assert page.evaluate("document.getElementById('progress').position") == -1  # indeterminate: it moves
    assert page.locator("#witnesses li").all_inner_texts() == [
        "Witness 1 (from x): waiting",
        "Witness 2 (from x): waiting",
    ]
    assert page.locator("#witnesses li").first.get_attribute("title") == "https://x/0.json"
    assert page.locator("#cancel").inner_text() == "Cancel and delete this collation"
    assert page.errors == []


def test_a_failed_collation_shows_no_full_bar_and_offers_to_delete_it(page: Any, root: str) -> None:
    page.goto(f"{root}/collations/{FAILED}")
    page.locator("#state", has_text="Failed.").wait_for()
    assert not page.locator("#progress").is_visible()
    assert page.locator("#cancel").is_visible()
    assert page.locator("#cancel").inner_text() == "Delete this collation"
    assert page.errors == []
