"""Errors of the IIIF layer, all under ``collation.errors.CollationError``.

Every message names the URL (or file) and the reason, so that a user who pasted a manifest URL
knows which document failed and why; the command line prints the message, the service returns it
as a problem document with ``http_status``.
"""

from __future__ import annotations

from collation.errors import CollationError, InputError


class ManifestError(InputError):
    """A IIIF document (manifest, annotation list, info.json) is unusable: bad JSON, HTML, wrong type."""

    def __init__(self, message: str, *, url: str | None = None, field: str | None = None) -> None:
        super().__init__(message, field=field)
        self.url = url


class UnsafeURLError(InputError):
    """A URL is refused by policy: not http(s), or its host resolves to a private address."""

    def __init__(self, message: str, *, url: str | None = None, field: str | None = None) -> None:
        super().__init__(message, field=field)
        self.url = url


class LimitError(InputError):
    """A document or image exceeds a configured cap (bytes, canvases, regions, pixels)."""

    http_status = 422

    def __init__(self, message: str, *, url: str | None = None, field: str | None = None) -> None:
        super().__init__(message, field=field)
        self.url = url


class FetchError(CollationError):
    """A remote server failed us: network error, HTTP error status, or a body that is not what it says.

    ``status`` is the upstream HTTP status when there was one; ``http_status`` (502) is what the
    service answers its own client.
    """

    http_status = 502

    def __init__(
        self, message: str, *, url: str | None = None, status: int | None = None, field: str | None = None
    ) -> None:
        super().__init__(message, field=field)
        self.url = url
        self.status = status
