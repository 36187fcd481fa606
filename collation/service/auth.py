"""Who is calling, and what it may change: the request's bearer token, checked against ``settings.api_tokens``.

The rule (README, "A public deployment"): with tokens, a collation belongs to the token that created
it. Anyone may read it by its id (viewers and shared links need that), but only its creator may
delete it or record verdicts on it; another token gets a 403 naming the reason. A collation created
without a token (before tokens were configured) may be changed by any valid token, and without
tokens (open mode) everyone may change everything, as before.
"""

from __future__ import annotations

import hashlib
import hmac

from flask import request

from collation.service import problems, state
from collation.store.records import CollationRecord


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


def token_hash(token: str) -> str:
    """What a record keeps of the token that submitted it (tokens themselves are never stored)."""
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


def caller_hash() -> str | None:
    """The hash of the request's valid bearer token; None without one (or without tokens configured)."""
    token = caller_token()
    return token_hash(token) if token else None


def require_creator(record: CollationRecord, action: str) -> None:
    """Lets the request ``action`` (e.g. "delete it") on ``record`` only when its caller may change it.

    Raises:
        Forbidden: tokens are configured, the collation was created with a token, and the request's
            is another (403, ``field`` Authorization).
    """
    if not state.current_runtime().settings.api_tokens or record.creator is None:
        return
    caller = caller_hash()
    if caller is not None and hmac.compare_digest(caller, record.creator):
        return
    raise problems.Forbidden(
        f"collation {record.id} was started with another token: only the token that started it may {action}",
        field="Authorization",
    )
