"""The timed walk (issue 29, item 5): from a blank page to an exported workbook, in Chromium, on the real
service started as the browser tests start it (Redis, iipsrv serving the shared Physiologus folios, the
P2 and P3 manifests on a loopback site, the app over HTTP, an in-process RQ worker), printing each step
and its seconds.

The steps are those of ``tests/stack/test_workspace_browser.py::test_a_historian_goes_the_whole_way``:
open New, add the two witnesses, preview them, start, follow to finished, open the pair page, record one
verdict, open the concordance, download the Excel workbook (opened with openpyxl: it must have rows).
The data store starts empty, so features and scores are computed (efficientnet-lite0 on the CPU, the
tests' settings). It runs as a pytest session of this one file so that the tests' fixtures start and
stop every component::

    COLLATION_TEST_DATA=/work/shared/data/physiologus PYTHONPATH=/tmp/pyx .venv/bin/python benchmarks/walk.py

The table goes to standard output (and the pytest summary after it).

``--folios 400`` walks instead with a generated manuscript of 400 folios without region annotations
(``test_detection_review_browser.generated_manuscript``: plain JPEGs, one drawing a folio) beside P2
(issue 39, item 1): the inspection does not search its pages; two worker processes (``python -m
collation worker``, one thread each, started before the page as on a server: it opens once both listen)
search them page by page (``POST /detections``) while the page shows them; the table adds the seconds
from "Look" to the first page shown (the issue's goal: 10 s) and to the last, then the collation runs
with the regions found::

    COLLATION_TEST_DATA=/work/shared/data/physiologus .venv/bin/python benchmarks/walk.py --folios 400
"""

from __future__ import annotations

import io
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "stack"), str(REPO / "tests" / "service")]

import pytest  # noqa: E402
import test_viewer_browser as viewer_test  # noqa: E402
from test_detection_review_browser import generated_manuscript  # noqa: E402
from test_workspace_browser import manifests  # noqa: E402, F401  (a fixture)

served, page = viewer_test.served, viewer_test.page  # fixtures
TIMEOUT_MS = 300_000  # a cold collation on a shared CPU
FIRST_PAGE_GOAL_S = 10  # issue 39: the first detected page shown within 10 s of "Look"


class Steps:
    """Runs named steps one after the other and keeps their wall-clock seconds."""

    def __init__(self) -> None:
        self.seconds: list[tuple[str, float]] = []

    def __call__(self, name: str, work: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        result = work()
        self.seconds.append((name, time.perf_counter() - start))
        print(f"{name:<34} {self.seconds[-1][1]:8.2f} s", flush=True)
        return result

    def table(self) -> str:
        rows = [f"| {name} | {seconds:.2f} |" for name, seconds in self.seconds]
        total = sum(seconds for _, seconds in self.seconds)
        return "\n".join(["| step | seconds |", "|---|---:|", *rows, f"| **total** | **{total:.2f}** |"])


def workbook_rows(data: bytes) -> tuple[int, str]:
    """Data rows of an .xlsx (its header left out) and the reader: openpyxl where it is installed (it is
    not a dependency of the project: ``pip install --target DIR openpyxl`` and ``PYTHONPATH=DIR``), else
    the standard-library reader of the export tests."""
    try:
        import openpyxl
    except ImportError:
        from test_hostile_exports import workbook_rows as read

        return len(read(data)) - 1, "zipfile (openpyxl not installed)"
    return openpyxl.load_workbook(io.BytesIO(data), read_only=True).active.max_row - 1, "openpyxl"


def listening(settings: Any, n: int, timeout: float = 120) -> None:
    """Waits until ``n`` workers are registered in Redis, i.e. take jobs (as on a server whose workers are
    up; their default backbone may still be loading, beside the work loop)."""
    from redis import Redis
    from rq import Worker

    connection, deadline = Redis.from_url(settings.redis_url), time.monotonic() + timeout
    while Worker.count(connection=connection) < n:
        if time.monotonic() > deadline:
            raise AssertionError(f"fewer than {n} workers listen after {timeout} s")
        time.sleep(0.1)
    connection.close()


def test_walk(served: Any, manifests: list[str], page: Any) -> None:  # noqa: F811
    from redis import Redis

    Redis.from_url(served.settings.redis_url).flushdb()
    root = served.url.removesuffix("/api/v1")
    page.set_viewport_size({"width": 1280, "height": 800})
    page.set_default_timeout(TIMEOUT_MS)
    step, state = Steps(), {}

    def open_new() -> None:
        page.goto(f"{root}/new")
        page.get_by_label("Manifest addresses").wait_for()

    def preview() -> None:
        page.get_by_role("button", name="Look at these manifests").click()
        page.wait_for_function("() => document.querySelectorAll('#preview .witness h3').length === 2")
        page.wait_for_function(
            "() => { const t = [...document.querySelectorAll('.region-thumb')];"
            " return t.length > 0 && t.every(i => i.complete && i.naturalWidth > 0); }"
        )

    def start() -> None:
        page.get_by_role("button", name="Start the collation").click()
        page.wait_for_url(re.compile(r"/collations/[0-9a-f]+$"))
        state["cid"] = page.url.rsplit("/", 1)[1]

    def follow() -> None:
        viewer_test.run_worker(served.settings)  # the page polls meanwhile (the app serves from a thread)
        page.locator("#state", has_text="Finished.").wait_for()

    def open_pairs() -> None:
        page.get_by_role("link", name=re.compile("Open the matches")).click()
        page.locator("#correspondences .candidate.selected").wait_for()

    def verdict() -> None:
        page.keyboard.press("1")  # exact copy, on the selected match
        page.locator("#message", has_text="Exact copy").wait_for()

    def open_concordance() -> None:
        page.goto(f"{served.url}/collations/{state['cid']}/concordance/view")
        page.locator("#concordance tbody tr").first.wait_for()

    def workbook() -> tuple[int, str]:
        page.goto(f"{root}/collations/{state['cid']}")
        with page.expect_download() as download:
            page.get_by_role("link", name="Concordance (Excel workbook)").click()
        return workbook_rows(Path(download.value.path()).read_bytes())

    step("open New", open_new)
    step("add the two witnesses", lambda: page.get_by_label("Manifest addresses").fill("\n".join(manifests)))
    step("preview (inspect, thumbnails)", preview)
    step("start", start)
    step("follow to finished (worker runs)", follow)
    step("open the pair page", open_pairs)
    step("record one verdict", verdict)
    step("open the concordance", open_concordance)
    rows, reader = step("download the workbook, read it", workbook)
    assert rows > 0, "the workbook has no rows"
    assert page.errors == [], page.errors
    print(f"\ncollation {state['cid']}: workbook rows {rows} (read with {reader})\n\n{step.table()}\n")


def test_walk_with_a_long_manuscript(served: Any, manifests: list[str], page: Any, site: Any, tmp_path: Path) -> None:  # noqa: F811
    """Blank page to workbook with a generated manuscript of ``WALK_FOLIOS`` folios beside P2."""
    from redis import Redis
    from service_helpers import WorkerProcesses

    folios = int(os.environ.get("WALK_FOLIOS", "0"))
    if not folios:
        pytest.skip("WALK_FOLIOS is not set (benchmarks/walk.py --folios N)")
    Redis.from_url(served.settings.redis_url).flushdb()
    root = served.url.removesuffix("/api/v1")
    page.set_viewport_size({"width": 1280, "height": 800})
    page.set_default_timeout(TIMEOUT_MS * 4)
    step, state = Steps(), {}
    generated = step(
        f"generate {folios} folios (not timed work)", lambda: generated_manuscript(site, f"long-{folios}", folios)
    )
    workers = WorkerProcesses(served.settings, tmp_path)
    for _ in range(2):
        workers.start(threads=1)
    try:
        page.goto(f"{root}/new")  # warm the page's files
        step("start two workers, until they listen (not timed work)", lambda: listening(served.settings, 2))

        def open_new() -> None:
            page.goto(f"{root}/new")
            page.get_by_label("Manifest addresses").wait_for()

        def look() -> None:
            page.get_by_label("Manifest addresses").fill("\n".join([generated, manifests[0]]))
            state["look"] = time.perf_counter()
            page.get_by_role("button", name="Look at these manifests").click()
            page.wait_for_function("() => document.querySelectorAll('#preview .witness h3').length === 2")

        def first_page() -> None:
            page.locator(".witness .detecting", has_text=re.compile(r"[1-9]\d* of \d+ pages searched")).wait_for()
            state["first"] = time.perf_counter() - state["look"]

        def last_page() -> None:
            page.locator(".witness .detecting", has_text="pages searched:").wait_for()
            state["last"] = time.perf_counter() - state["look"]
            state["found"] = page.locator(".witness .detecting").inner_text()

        def start() -> None:
            page.get_by_role("button", name="Start the collation").click()
            page.wait_for_url(re.compile(r"/collations/[0-9a-f]+$"))
            state["cid"] = page.url.rsplit("/", 1)[1]

        def follow() -> None:
            page.locator("#state", has_text="Finished.").wait_for()

        def workbook() -> tuple[int, str]:
            with page.expect_download() as download:
                page.get_by_role("link", name="Concordance (Excel workbook)").click()
            return workbook_rows(Path(download.value.path()).read_bytes())

        step("open New", open_new)
        step("paste, look (inspect both)", look)
        step("until the first detected page shows", first_page)
        step(f"until all {folios} pages are searched", last_page)
        step("start", start)
        step("follow to finished (2 workers)", follow)
        rows, reader = step("download the workbook, read it", workbook)
    finally:
        workers.stop_all()
    assert rows > 0 and page.errors == [], page.errors
    print(
        f"\ncollation {state['cid']}: {state['found']} first detected page shown {state['first']:.1f} s after Look"
        f" ({'within' if state['first'] <= FIRST_PAGE_GOAL_S else 'over'} the {FIRST_PAGE_GOAL_S} s goal),"
        f" the last {state['last']:.1f} s after; workbook rows {rows} (read with {reader})\n\n{step.table()}\n"
    )


if __name__ == "__main__":
    arguments = [__file__, "-p", "conftest", "-n", "0", "-q", "-s", "-p", "no:cacheprovider", "--rootdir", str(REPO)]
    if "--folios" in sys.argv:
        os.environ["WALK_FOLIOS"] = sys.argv[sys.argv.index("--folios") + 1]
        arguments += ["-k", "long_manuscript"]
    else:
        arguments += ["-k", "not long_manuscript"]
    sys.exit(pytest.main(arguments))
