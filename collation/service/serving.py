"""The waitress server of ``collate serve``: the request body cap, and problem documents for the errors
waitress answers itself.

waitress reads a request's headers and body before the app sees it. With ``max_request_body_size``
set to ``settings.limits.max_body_bytes`` it refuses a larger body as soon as the Content-Length header (or
the running total of a chunked body) passes the cap, without reading the rest. Its own error answers
(413, and the 400 of a header it cannot parse, e.g. a NUL byte in a bearer token) are plain text
without CORS headers; ``ProblemErrorTask`` answers them as the app's problem documents, with the
``Access-Control-Allow-Origin`` and the security headers of every other response, so a browser client
can read them too.

The liveness probe ``/healthz`` has a thread of its own (``LivenessFirst``): when every request thread
waits on a backend (an object store that stopped answering, issue 31), it still answers at once, and
an orchestrator does not restart an API that is alive.
"""

from __future__ import annotations

import json
from typing import Any

from flask import Flask
from waitress import create_server
from waitress.channel import HTTPChannel
from waitress.task import ErrorTask, ThreadedTaskDispatcher

from collation.core.settings import Settings
from collation.service.headers import security_headers
from collation.service.problems import MEDIA_TYPE, PROBLEM_TYPE

LIVENESS_PATHS = frozenset({"/api/v1/healthz"})
"""Paths answered on the liveness thread: they must touch nothing but the process itself."""


def make_server(app: Flask, settings: Settings, *, threads: int = 8) -> Any:
    """A waitress server of ``app`` on ``settings.host``/``settings.port``, bodies capped at
    ``settings.limits.max_body_bytes``; ``server.run()`` serves, ``server.effective_port`` is its port."""
    server = create_server(
        app,
        host=settings.host,
        port=settings.port,
        threads=threads,
        max_request_body_size=settings.limits.max_body_bytes,
        _dispatcher=LivenessFirst(threads),
    )
    server.channel_class = problem_channel(settings.cors_origin)
    return server


class LivenessFirst(ThreadedTaskDispatcher):
    """waitress's pool of ``threads`` request threads, and one more for the connections whose request
    is the liveness probe (``LIVENESS_PATHS``), so that it never queues behind requests that wait."""

    def __init__(self, threads: int) -> None:
        super().__init__()
        self.set_thread_count(threads)
        self.liveness = ThreadedTaskDispatcher()
        self.liveness.set_thread_count(1)

    def add_task(self, task: Any) -> None:
        # a task is a connection whose first unanswered request is requests[0]; a request waitress could
        # not parse (a NUL byte in a header) has no path, and goes to the pool, which answers its error
        requests = getattr(task, "requests", None)
        if requests and getattr(requests[0], "path", None) in LIVENESS_PATHS:
            self.liveness.add_task(task)
        else:
            super().add_task(task)

    def shutdown(self, cancel_pending: bool = True, timeout: int = 5) -> bool:
        self.liveness.shutdown(cancel_pending, timeout)
        return super().shutdown(cancel_pending, timeout)


def problem_channel(cors_origin: str) -> type[HTTPChannel]:
    """A waitress channel whose own error answers are problem documents with the CORS header."""

    class ProblemErrorTask(ErrorTask):
        def execute(self) -> None:
            error = self.request.error
            body = {"type": PROBLEM_TYPE, "title": error.reason, "status": error.code, "detail": error.body}
            if error.code == 413:
                body["detail"] = "the request body is larger than the cap (COLLATION_MAX_BODY_BYTES)"
                body["field"] = "body"
            data = json.dumps(body).encode("utf-8")
            self.status = f"{error.code} {error.reason}"
            self.response_headers.extend([("Content-Type", MEDIA_TYPE), ("Access-Control-Allow-Origin", cors_origin)])
            self.response_headers.extend(security_headers(MEDIA_TYPE).items())
            self.set_close_on_finish()
            self.content_length = len(data)
            self.write(data)

    class ProblemChannel(HTTPChannel):
        error_task_class = ProblemErrorTask

    return ProblemChannel
