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
"""

from __future__ import annotations

import io
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "service")]

import pytest  # noqa: E402
import test_viewer_browser as viewer_test  # noqa: E402
from test_workspace_browser import manifests  # noqa: E402, F401  (a fixture)

served, page = viewer_test.served, viewer_test.page  # fixtures
TIMEOUT_MS = 300_000  # a cold collation on a shared CPU


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
        page.locator("#message", has_text="Confirmed").wait_for()

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


if __name__ == "__main__":
    sys.exit(
        pytest.main(
            [__file__, "-p", "conftest", "-n", "0", "-q", "-s", "-p", "no:cacheprovider", "--rootdir", str(REPO)]
        )
    )
