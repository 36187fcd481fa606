"""Regression tests of what the hostile run of issue 41 broke: each failed before its fix.

Fast: the app with a real Redis and no worker (or one in-process burst worker). The store's unreadable
objects are in tests/store/test_unreadable_objects.py, the metrics' bounded labels in
tests/service/test_metric_labels.py.
"""

from __future__ import annotations

import io
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from collation.core.logs import ContextFilter, formatter

API = "/api/v1"


# -- 7: the text access log cannot be forged ---------------------------------------------------------

FORGED = "abc%0A2026-11-28%2003:00:00,000%20collation.access%20CRITICAL%20FORGED-TEXT-LINE"


def test_a_newline_in_a_path_stays_on_its_access_line(client: Any) -> None:
    """The default text format wrote the decoded path as it was: ``%0A`` began a line of the attacker's."""
    stream, access = io.StringIO(), logging.getLogger("collation.access")
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter("text"))
    handler.addFilter(ContextFilter())
    access.addHandler(handler)
    access.setLevel(logging.INFO)
    try:
        client.get(f"{API}/collations/{FORGED}")
        client.get(f"{API}/collations/x%1B%5B31mred%C2%85next%E2%80%A8sep")  # ESC, NEL, LINE SEPARATOR
    finally:
        access.removeHandler(handler)
        access.setLevel(logging.NOTSET)
    lines = stream.getvalue().split("\n")
    assert lines[-1] == "" and len(lines) == 3, lines
    forged, escapes = lines[:2]
    assert " collation.access INFO GET /api/v1/collations/abc\\n2026-11-28 03:00:00,000 collation.access" in forged
    assert "CRITICAL FORGED-TEXT-LINE" in forged and not forged.startswith("2026-11-28 03:00:00,000")
    assert "/collations/x\\x1b[31mred\\x85next\\u2028sep " in escapes
    assert not any(ch in stream.getvalue() for ch in "\r\x1b\x85\u2028")


# -- 3: a retry racing a DELETE never brings the collation back ----------------------------------------


def test_after_a_delete_answered_204_a_racing_retry_never_brings_the_collation_back(app: Any) -> None:
    """Retry, DELETE and retry at once on a failed collation: the retry read the record outside the lock
    the DELETE takes, then wrote it back (19 rounds of 20 in the hostile run)."""
    from builders import record

    from collation.service.state import service_state

    store, client = service_state(app).runtime.store, app.test_client()
    came_back = []
    for round_ in range(20):
        cid = f"{round_:016x}"
        store.create_collation(record(cid=cid, status="failed", errors=["prepare 0: unreachable"]))
        barrier = threading.Barrier(3)

        def send(method: str, path: str, barrier: threading.Barrier = barrier) -> int:
            barrier.wait()
            return client.open(path, method=method).status_code

        calls = [("POST", f"{API}/collations/{cid}/retry"), ("DELETE", f"{API}/collations/{cid}")]
        with ThreadPoolExecutor(3) as pool:
            retry1, delete, retry2 = pool.map(lambda c: send(*c), [calls[0], calls[1], calls[0]])
        assert delete in (204, 409) and {retry1, retry2} <= {202, 404, 409}, (retry1, delete, retry2)
        if delete == 204 and store.exists(cid):
            came_back.append((round_, retry1, retry2))
    assert came_back == []
