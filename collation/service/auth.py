"""Who is calling: the request's bearer token, checked against ``settings.api_tokens``."""

from __future__ import annotations

import hmac

from flask import request

from collation.service import problems, state


def caller_token() -> str | None:
    """The request's bearer token when it is one of ``settings.api_tokens``; None when it sends none.

    Raises:
        Unauthorized: an ``Authorization`` header that is not a valid bearer token (401).
    """
    tokens = state.current_runtime().settings.api_tokens
    header = request.headers.get("Authorization", "")
    if not tokens or not header:
        return None
    scheme, _, token = header.partition(" ")
    # Bytes: compare_digest refuses str with non-ASCII characters, and a header may hold any.
    given = token.strip().encode("utf-8", "surrogateescape")
    for t in tokens:
        if scheme.lower() == "bearer" and hmac.compare_digest(given, t.encode("utf-8")):
            return t
    raise problems.Unauthorized("this request needs a valid bearer token", field="Authorization")
