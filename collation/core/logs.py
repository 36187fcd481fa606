"""How ``collate serve`` and ``collate worker`` log: plain lines or JSON lines, with the collation, job and
step a line belongs to, and RQ's housekeeping out of the way.

- ``COLLATION_LOG_FORMAT=text`` (the default): ``time logger level message``, one line per record: the
  control characters of a message (a newline in a requested path, a terminal escape) are written as
  Python escapes (``\\n``, ``\\x1b``), so that request data can never begin a line of its own.
  ``COLLATION_LOG_FORMAT=json``: one JSON object a line (python-json-logger) with ``time`` (UTC), ``level``,
  ``logger``, ``message``, and ``collation_id``, ``job_id`` and ``step`` on the lines logged while a
  worker runs a job or the API answers a request about a collation; the API's access lines add
  ``method``, ``path``, ``status``, ``duration_ms`` and ``remote_addr``.
- The fields come from a context variable: the worker sets it around each job
  (``with log_context(collation_id=..., job_id=..., step=...)``), the API around each request, and a
  filter on the handler copies it onto every record, RQ's and the libraries' included.
- RQ logs "cleaning registries" at INFO every maintenance interval (a third of a quiet worker's
  lines); ``RQHousekeeping`` lowers those lines to DEBUG.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import sys
from collections.abc import Iterator
from types import MappingProxyType
from typing import Any

from pythonjsonlogger.json import JsonFormatter

from collation.core.settings import Settings

CONTEXT_FIELDS = ("collation_id", "job_id", "step")
"""The fields a line carries when it was logged inside ``log_context``."""
TEXT_FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"
JSON_FIELDS = "%(levelname)s %(name)s %(message)s"
JSON_NAMES = {"levelname": "level", "name": "logger"}
"""The JSON keys of the standard fields (``level``, ``logger``, ``message``; ``time`` is added in UTC, ISO 8601)."""
HANDLER_NAME = "collation"
"""The name of the handler ``configure_logging`` installs on the root logger."""
RQ_HOUSEKEEPING = ("Worker %s: cleaning registries", "Worker %s: cleaning group registries")
"""The beginnings of the RQ log messages (their format strings, rq 3.0) that ``RQHousekeeping`` lowers to DEBUG."""

_context: contextvars.ContextVar[MappingProxyType] = contextvars.ContextVar(
    "collation_log_context", default=MappingProxyType({})
)
"""The fields of the job or request being handled (set by ``log_context``; read-only mappings)."""


@contextlib.contextmanager
def log_context(**fields: Any) -> Iterator[None]:
    """Every line logged inside the block (in this thread or task) carries ``fields`` (None values are left out)."""
    token = push_context(**fields)
    try:
        yield
    finally:
        pop_context(token)


def push_context(**fields: Any) -> contextvars.Token:
    """``log_context`` in two halves, for hooks that open and close around a request: adds ``fields``
    until ``pop_context`` of the token returned."""
    return _context.set(MappingProxyType({**_context.get(), **{k: v for k, v in fields.items() if v is not None}}))


def pop_context(token: contextvars.Token) -> None:
    """Ends what ``push_context`` began."""
    _context.reset(token)


def context_fields() -> dict[str, Any]:
    """The fields ``log_context`` set for the code running now."""
    return dict(_context.get())


class ContextFilter(logging.Filter):
    """Copies the ``log_context`` fields onto each record a handler emits (a field already there stays)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in _context.get().items():
            if not hasattr(record, name):
                setattr(record, name, value)
        return True


class RQHousekeeping(logging.Filter):
    """Lowers RQ's registry-cleaning lines (``RQ_HOUSEKEEPING``) to DEBUG: on the ``rq.worker`` logger, they
    are dropped unless that logger logs DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO or not str(record.msg).startswith(RQ_HOUSEKEEPING):
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


CONTROL_ESCAPES = {
    code: chr(code).encode("unicode_escape").decode("ascii")
    for code in [*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029]
}
"""``str.translate`` table: each control character (C0, DEL, C1, and the Unicode line and paragraph
separators) to its Python escape, ``\\n``, ``\\r``, ``\\x1b``, ``\\u2028``."""


def escape_controls(text: str) -> str:
    """``text`` with its control characters written as escapes (``CONTROL_ESCAPES``): one line, no
    terminal sequences."""
    return text.translate(CONTROL_ESCAPES)


class TextFormatter(logging.Formatter):
    """``TEXT_FORMAT`` with the message's control characters escaped (``escape_controls``): a logged
    request path such as ``/abc%0A2026-... CRITICAL FORGED`` stays on its own line. A traceback, which
    the formatter appends after the message, keeps its lines."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def formatMessage(self, record: logging.LogRecord) -> str:  # logging.Formatter's name
        return escape_controls(super().formatMessage(record))


def formatter(log_format: str) -> logging.Formatter:
    """The formatter of ``COLLATION_LOG_FORMAT``: ``text`` or ``json`` (JSON escapes control characters
    in its strings)."""
    if log_format == "json":
        return JsonFormatter(JSON_FIELDS, rename_fields=JSON_NAMES, timestamp="time", json_ensure_ascii=False)
    return TextFormatter()


def configure_logging(settings: Settings, stream: Any = None) -> logging.Handler:
    """Sends the process's logs to ``stream`` (stderr) at ``settings.log_level`` in ``settings.log_format``,
    with the ``log_context`` fields and RQ's housekeeping at DEBUG. A second call replaces the handler of
    the first (no line is logged twice); other handlers stay. Returns the handler."""
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.set_name(HANDLER_NAME)
    handler.setFormatter(formatter(settings.log_format))
    handler.addFilter(ContextFilter())
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == HANDLER_NAME]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(settings.log_level.upper())
    rq_worker = logging.getLogger("rq.worker")
    if not any(isinstance(f, RQHousekeeping) for f in rq_worker.filters):
        rq_worker.addFilter(RQHousekeeping())
    return handler
