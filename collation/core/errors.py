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


class OptionError(InputError):
    """An option has a value outside its allowed set; the message names the option and lists the set.

    Attributes:
        option: the option's name, e.g. ``"kernel"`` (also ``field``).
        value: the value given.
        allowed: the values the option accepts.
    """

    def __init__(self, option: str, value: object, allowed: tuple[str, ...] | list[str]) -> None:
        self.option = option
        self.value = value
        self.allowed = tuple(allowed)
        super().__init__(f"unknown {option} {value!r}: choose one of {', '.join(self.allowed)}", field=option)


class ShapeError(InputError):
    """A tensor or array does not have the shape a function documents, as ``(B, N, 2)``.

    Attributes:
        name: the argument's name (also ``field``).
        actual: the shape given.
        expected: the documented shape, with names for free sizes and integers for fixed ones.
    """

    def __init__(self, name: str, actual: tuple[int, ...], expected: tuple[int | str, ...], detail: str = "") -> None:
        self.name = name
        self.actual = tuple(actual)
        self.expected = tuple(expected)
        text = f"{name} must have shape ({', '.join(map(str, self.expected))}), not {self.actual}"
        super().__init__(f"{text}: {detail}" if detail else text, field=name)


class DTypeError(InputError):
    """A tensor or array has a data type the function cannot use.

    Attributes:
        name: the argument's name (also ``field``).
        actual: the data type given, as text (``"torch.float64"``, ``"float64"``).
        expected: what the function accepts, in words (``"an integer type"``).
    """

    def __init__(self, name: str, actual: object, expected: str) -> None:
        self.name = name
        self.actual = str(actual)
        self.expected = expected
        super().__init__(f"{name} must have {expected}, not {self.actual}", field=name)


class IndexRangeError(InputError):
    """Indices point outside the illustrations (or matrix rows and columns) they refer to.

    Attributes:
        name: the argument's name (also ``field``).
        bounds: the exclusive upper bound of each index column.
    """

    def __init__(self, name: str, bounds: tuple[int, ...], detail: str = "") -> None:
        self.name = name
        self.bounds = tuple(bounds)
        text = f"{name} indices out of range for {' x '.join(map(str, self.bounds))}"
        super().__init__(f"{text}: {detail}" if detail else text, field=name)


class FeaturesFileError(CollationError):
    """A features file cannot be read back: truncated, corrupt, or not written by ``MultiScaleFeatures.save``.

    It is not the user's input but the data store's (or a file handed over by hand), hence status 500.

    Attributes:
        path: the file.
    """

    http_status = 500

    def __init__(self, path: object, reason: str) -> None:
        self.path = str(path)
        super().__init__(f"features file {self.path}: {reason}", field="features")


class StoreFormatError(CollationError):
    """An object of the data store is in a format this release cannot read (``collation.core.formats``):
    written by a newer release, or older than this release reads. The message says what to run.

    It is the data store's state, not the user's input, hence status 500.

    Attributes:
        found: the format number read.
    """

    http_status = 500

    def __init__(self, message: str, *, found: object) -> None:
        self.found = found
        super().__init__(message, field="format")


# Errors of reading IIIF and of fetching: every message names the URL (or file) and the reason, so
# that a user who pasted a manifest URL knows which document failed and why.


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
