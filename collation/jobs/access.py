"""IIIF Auth 2.0 access tokens of a collation: kept encrypted while its manuscripts are prepared.

A ``POST /collations`` may carry ``access_tokens``, ``[{"service": <access service id>, "token": ...}]``,
tokens the user obtained from a library's IIIF Auth 2 token service. The API encrypts them
(Fernet, under a key derived from ``settings.access_token_key``, which the workers share) into one Redis
key with a lifetime (``keep``); the worker that prepares a manuscript decrypts them (``load``) and hands
them to its fetcher, which sends a token only to the hosts whose Image API answered 401 naming that
access service (``collation.iiif.info.read_info``, ``net.credentials``); the key is deleted when
the collation ends or is deleted (``forget``). A token is never written to the data store, the
record, a log line or a published document, and the collation's id takes only a hash of the tokens
(``tokens_digest``), so that the same request with a token is another collation than without.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import logging
from collections.abc import Iterator

from cryptography.fernet import Fernet, InvalidToken
from redis import Redis

from collation.net.http import Fetcher
from collation.store.redis_keys import RedisKeys

log = logging.getLogger(__name__)

LIFETIME = 24 * 3600
"""Seconds the encrypted tokens are kept at most (a collation prepares its manuscripts long before)."""


def _cipher(secret: str) -> Fernet:
    digest = hashlib.sha256(b"image-collation access tokens:" + secret.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def tokens_digest(tokens: dict[str, str]) -> str:
    """A hash of the tokens by service (what enters the collation's id instead of them)."""
    lines = sorted(f"{service} {hashlib.sha256(token.encode()).hexdigest()}" for service, token in tokens.items())
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def keep(redis: Redis, secret: str, cid: str, tokens: dict[str, str]) -> None:
    """Stores ``tokens`` (access service id -> token) for collation ``cid``, encrypted, for ``LIFETIME``."""
    redis.set(RedisKeys.access_tokens(cid), _cipher(secret).encrypt(json.dumps(tokens).encode()), ex=LIFETIME)


def load(redis: Redis | None, secret: str, cid: str) -> dict[str, str]:
    """The tokens of ``cid`` (empty when none were given, they expired, or the key does not match)."""
    data = redis.get(RedisKeys.access_tokens(cid)) if redis is not None else None
    if not data:
        return {}
    try:
        return json.loads(_cipher(secret).decrypt(data))
    except (InvalidToken, ValueError):
        log.warning("Collation %s: its access tokens cannot be decrypted (COLLATION_ACCESS_TOKEN_KEY differs)", cid)
        return {}


@contextlib.contextmanager
def fetcher_with_tokens(fetcher: Fetcher, redis: Redis | None, secret: str, cid: str) -> Iterator[Fetcher]:
    """``fetcher``, or, when ``cid`` has access tokens, a fetcher of its own holding them (closed after)."""
    tokens = load(redis, secret, cid)
    if not tokens:
        yield fetcher
        return
    own = fetcher.with_access_tokens(tokens)
    try:
        yield own
    finally:
        own.session.close()


def forget(redis: Redis | None, cid: str) -> None:
    if redis is not None:
        redis.delete(RedisKeys.access_tokens(cid))
