"""Every error the API answers is an RFC 9457 problem document (``application/problem+json``).

One error handler maps the project's ``CollationError`` (with its ``http_status`` and ``field``),
marshmallow's ``ValidationError`` (400, every bad field named), redis's ``RedisError`` (503: Redis is
not reachable), an ``OSError`` of a data store that cannot be written (503: read-only, full) and
werkzeug's ``HTTPException`` (404, 405, ...); anything else becomes a 500 with no
stack trace in the body (the traceback is logged).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from flask import Flask, Response, json, request
from marshmallow import ValidationError
from redis.exceptions import RedisError
from werkzeug.exceptions import HTTPException

from collation.core.errors import CollationError
from collation.store import writable

log = logging.getLogger("collation.service")

PROBLEM_TYPE = "about:blank"
"""RFC 9457 section 4.2.1: no type of our own; ``title``, ``detail`` and ``field`` say what went wrong."""
MEDIA_TYPE = "application/problem+json"


def problem(
    status: int,
    title: str,
    detail: str | None = None,
    *,
    field: str | None = None,
    errors: list[dict[str, str]] | None = None,
    headers: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
) -> Response:
    """A problem document response.

    Args:
        field: the request field at fault (dotted path, e.g. ``manifests.1`` or ``pair``).
        errors: every ``{"field", "detail"}`` when several fields are at fault.
    """
    body: dict[str, Any] = {"type": PROBLEM_TYPE, "title": title, "status": status}
    if detail:
        body["detail"] = detail
    body["instance"] = request.path
    if field:
        body["field"] = field
    if errors:
        body["errors"] = errors
    body.update(extra or {})
    response = Response(json.dumps(body), status=status, mimetype=MEDIA_TYPE)
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


def _flatten(messages: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    """marshmallow's nested messages as (dotted field, message) pairs."""
    if isinstance(messages, dict):
        for key, value in messages.items():
            name = str(key) if key != "_schema" else ""
            yield from _flatten(value, f"{prefix}.{name}".strip(".") if name else prefix)
    elif isinstance(messages, list | tuple):
        for value in messages:
            yield from _flatten(value, prefix)
    else:
        yield prefix or "body", str(messages)


def handle_validation_error(exc: ValidationError) -> Response:
    errors = [{"field": field, "detail": message} for field, message in _flatten(exc.messages)]
    detail = "; ".join(f"{e['field']}: {e['detail']}" for e in errors)
    return problem(400, "Invalid request", detail, field=errors[0]["field"] if errors else None, errors=errors)


def handle_collation_error(exc: CollationError) -> Response:
    status = int(getattr(exc, "http_status", 400))
    title = {
        400: "Invalid request",
        401: "Unauthorized",
        403: "Forbidden",
        404: "Not found",
        409: "Conflict",
        413: "Payload too large",
        422: "Unprocessable request",
        429: "Too many requests",
        502: "Upstream failure",
        503: "Unavailable",
        504: "Upstream timeout",
    }.get(status, "Error")
    headers = {"WWW-Authenticate": 'Bearer realm="collation"'} if status == 401 else {}
    if getattr(exc, "retry_after", None) is not None:
        headers["Retry-After"] = str(exc.retry_after)
    return problem(status, title, exc.message, field=exc.field, headers=headers)


def handle_redis_error(exc: RedisError) -> Response:
    log.warning("Redis is not reachable on %s %s: %s", request.method, request.path, exc)
    return problem(503, "Unavailable", f"Redis is not reachable: {exc}")


def handle_os_error(exc: OSError) -> Response:
    """A data store that cannot be written (``store.writable.STORE_ERRNOS``: read-only, full) is a 503."""
    if not writable.is_store_error(exc):
        return handle_unexpected(exc)
    log.error("The data store cannot be written on %s %s: %s", request.method, request.path, exc)
    return problem(503, "Unavailable", writable.describe(exc))


def handle_http_exception(exc: HTTPException) -> Response:
    headers = {}
    if exc.code == 405 and exc.valid_methods:
        headers["Allow"] = ", ".join(exc.valid_methods)
    return problem(exc.code or 500, exc.name, exc.description, headers=headers)


def handle_unexpected(exc: Exception) -> Response:
    log.exception("Unhandled error on %s %s", request.method, request.path)
    return problem(500, "Internal server error", "The server failed; the error is logged.")


def init_app(app: Flask) -> None:
    """Registers the one mapping of exceptions to problem documents."""
    app.register_error_handler(ValidationError, handle_validation_error)
    app.register_error_handler(CollationError, handle_collation_error)
    app.register_error_handler(RedisError, handle_redis_error)
    app.register_error_handler(HTTPException, handle_http_exception)
    app.register_error_handler(OSError, handle_os_error)
    app.register_error_handler(Exception, handle_unexpected)


class Unauthorized(CollationError):
    """A write request without a valid bearer token, while tokens are configured."""

    http_status = 401


class Forbidden(CollationError):
    """A valid token asks to change a collation that another token created (``service.auth.require_creator``)."""

    http_status = 403


class Conflict(CollationError):
    """The collation is not in a state that allows the request (e.g. results of an unfinished one)."""

    http_status = 409


class Unavailable(CollationError):
    """Redis is not configured or not reachable."""

    http_status = 503


class PayloadTooLarge(CollationError):
    """A request body larger than ``settings.limits.max_body_bytes``."""

    http_status = 413


class Busy(CollationError):
    """Too many requests of a kind at once: 429 for one client, 503 for all; ``retry_after`` seconds."""

    def __init__(self, message: str, *, http_status: int, retry_after: int, field: str | None = None) -> None:
        super().__init__(message, field=field)
        self.http_status = http_status
        self.retry_after = retry_after
