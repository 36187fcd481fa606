"""The project's exceptions: one base class, so callers can catch everything the project raises.

The command line turns any ``CollationError`` into a one-line message and exit status 2; the
service turns it into an RFC 9457 problem document with status ``http_status``.
"""

from __future__ import annotations


class CollationError(Exception):
    """Base class of every error this project raises on purpose."""

    http_status = 400

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class InputError(CollationError):
    """The user's input is unusable: a missing folder, an unreadable image, a bad option."""


class WeightsNotFoundError(CollationError):
    """Pretrained weights for a backbone are not on this machine."""

    http_status = 500


class GroundTruthError(InputError):
    """A ground-truth file does not fit the score matrix it is evaluated against."""
