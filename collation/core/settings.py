"""Every setting of the project, parsed once from the environment: the one settings surface.

``Settings.from_env()`` reads ``COLLATION_<NAME>`` for each field (``COLLATION_IIIF_<NAME>`` for the
fields of ``FetchSettings``), with one parser per type, and raises ``SettingsError`` naming the
variable when a value does not parse. Every default is here, next to its help text; the README's
configuration table is generated from these fields (``python -m collation.core.settings``) and a test
checks that the two agree.

The API process, the workers and the command line all build one ``Settings`` and pass it down:
nothing else in the package reads ``COLLATION_*`` variables.

Longer than 400 lines because every setting lives here with its default and help text (the one
settings surface), next to the parsers and the README table generated from them: a split would put the
table's rows away from the fields they describe.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from collation.core import defaults
from collation.core.errors import InputError
from collation.core.options import PRECISIONS

ENV_PREFIX = "COLLATION_"
IIIF_PREFIX = "COLLATION_IIIF_"
USER_AGENT = "image-collation/0.1"

DEVICES = ("auto", "cpu", "cuda")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LOG_FORMATS = ("text", "json")
# fmt: off
AT_LEAST_ONE = (
    "chunk_pairs", "job_timeout", "heartbeat_ttl", "max_manifests", "max_regions", "max_regions_total", "max_pairs",
    "features_cached", "store_cache_bytes", "page_size", "max_body_bytes", "inspect_concurrency", "client_max_active",
    "inspect_per_client", "inspect_max_json_bytes", "inspect_max_json_items", "client_max_regions",
)
# fmt: on
"""The integer settings that must be at least 1."""


class SettingsError(InputError):
    """A ``COLLATION_*`` variable (or an override) has a value that cannot be used."""


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class FetchSettings:
    """How IIIF documents and images are fetched: politeness, limits and the address policy."""

    user_agent: str = field(default=USER_AGENT, metadata=_help("User-Agent of every request."))
    connect_timeout: float = field(default=10.0, metadata=_help("Seconds to open a connection."))
    read_timeout: float = field(default=30.0, metadata=_help("Seconds between two reads of a body."))
    total_timeout: float = field(default=120.0, metadata=_help("Seconds for one whole response."))
    retries: int = field(default=3, metadata=_help("Further attempts after a 429, a 5xx or a connection error."))
    backoff: float = field(default=1.0, metadata=_help("First back-off in seconds, doubled on each retry."))
    max_retry_after: float = field(default=60.0, metadata=_help("Longest Retry-After honoured; longer ones fail."))
    max_redirects: int = field(default=5, metadata=_help("Redirects followed per request, each checked."))
    per_host: int = field(default=4, metadata=_help("Concurrent requests per host."))
    min_interval: float = field(
        default=0.0, metadata=_help("Seconds between two request starts on one host (e.g. 12 for Gallica).")
    )
    cache_dir: Path | None = field(
        default=None,
        metadata=_help(
            "On-disk cache of fetched documents and images; "
            "unset: memory only (the command line uses "
            "`$XDG_CACHE_HOME/image-collation/iiif`)."
        ),
    )
    json_cache_entries: int = field(default=512, metadata=_help("Parsed JSON documents kept in memory."))
    json_cache_bytes: int = field(
        default=64 * 2**20,
        metadata=_help(
            "Memory the parsed JSON documents kept may take, in bytes (a parsed document takes 10-25 times its "
            "JSON text; larger ones are not kept)."
        ),
    )
    max_json_bytes: int = field(default=32 * 2**20, metadata=_help("Cap of one manifest, list or info.json."))
    max_json_items: int = field(
        default=4_000_000,
        metadata=_help(
            "Cap of the values in one JSON document (its `{`, `[` and `,` bytes, counted before it is parsed)."
        ),
    )
    max_image_bytes: int = field(default=64 * 2**20, metadata=_help("Cap of one image response."))
    max_image_pixels: int = field(default=100_000_000, metadata=_help("Cap of one decoded image."))
    max_decoded_bytes: int = field(default=2**30, metadata=_help("Cap of the memory one image takes decoded."))
    max_canvases: int = field(default=10_000, metadata=_help("Canvases read from one manifest."))
    region_long_side: int = field(
        default=352,
        metadata=_help("Long side in pixels of fetched region images (the features need 22 cells of 16 px)."),
    )
    allow_private: bool = field(
        default=False,
        metadata=_help("Fetch from private, loopback and link-local addresses too (never on a public service)."),
    )


def default_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/image-collation/iiif`` (``~/.cache/...`` when unset): where the command line
    keeps fetched manifests and images between runs when ``COLLATION_IIIF_CACHE_DIR`` is unset."""
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "image-collation" / "iiif"


@dataclass(frozen=True)
class Settings:
    """The settings of one process. Field ``name`` is read from ``COLLATION_<NAME>``."""

    redis_url: str | None = field(
        default=None,
        metadata=_help("Redis of the queues. Unset: `collate serve` starts a private one. Workers need it."),
    )
    data_dir: Path = field(
        default=Path("data"),
        metadata=_help(
            "The data store: collations, region images, cached features and scores, shared by the API and all "
            "workers. With `COLLATION_STORE_URL`: this machine's own cache of what it reads from the object store."
        ),
    )
    store_url: str | None = field(
        default=None,
        metadata=_help(
            "`s3://bucket/prefix`: keep the data store in an S3-compatible object store, for API and workers on "
            "machines that share no disk (credentials from `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`, or "
            "boto3's other usual sources). Unset: the folder `COLLATION_DATA_DIR`."
        ),
    )
    store_endpoint: str | None = field(
        default=None,
        metadata=_help(
            "URL of the object store's S3 API (SeaweedFS, MinIO, Ceph...); unset: `AWS_ENDPOINT_URL`, else AWS."
        ),
    )
    store_cache_bytes: int = field(
        default=8 * 2**30,
        metadata=_help("Bytes of features and region images a process keeps in its local cache of the object store."),
    )
    store_connect_timeout: float = field(default=2.0, metadata=_help("Seconds to connect to the object store."))
    store_read_timeout: float = field(
        default=5.0,
        metadata=_help(
            "Seconds to wait for an answer of the object store; after a wait that long it is not asked again for as "
            "long (requests fail at once: the API answers 503 naming it instead of waiting on it in every thread)."
        ),
    )
    store_retries: int = field(default=1, metadata=_help("Further attempts of an object-store request after a 5xx."))
    device: str = field(
        default="auto",
        metadata=_help("`auto` (CUDA when present), `cpu`, `cuda` or `cuda:N` for feature extraction and scoring."),
    )
    backbone: str = field(
        default=defaults.BACKBONE,
        metadata=_help("Default of the `backbone` option (`resnet50-conv4` is the paper's; it needs its weights)."),
    )
    feature_precision: str = field(
        default="auto", metadata=_help("Features' arithmetic: `auto` (bfloat16 where native), `float32`, `bfloat16`.")
    )
    weights_dir: Path | None = field(
        default=None, metadata=_help("Folder with `resnet50-0676ba61.pth` (else the torch cache).")
    )
    detector_model: Path | None = field(
        default=None,
        metadata=_help(
            "TorchScript illustration detector for pages without region annotations (contract in "
            "docs/detection.md); unset: the built-in image-analysis detector."
        ),
    )
    detector_min_score: float = field(
        default=0.5, metadata=_help("Detected illustrations scoring lower (0..1) are dropped.")
    )
    allowed_hosts: tuple[str, ...] = field(
        default=(),
        metadata=_help(
            "Comma-separated hosts that may be fetched although they resolve to private or loopback addresses, "
            "e.g. `127.0.0.1` for a local image server. Everything else private is refused."
        ),
    )
    api_tokens: tuple[str, ...] = field(
        default=(),
        metadata=_help(
            "Comma-separated bearer tokens. When set, POST and DELETE need `Authorization: Bearer <token>`; reads "
            "stay open for viewers."
        ),
    )
    access_token_key: str = field(
        default="",
        repr=False,
        metadata=_help(
            "Secret (any text) that encrypts the IIIF Auth 2 access tokens a request carries while its images are "
            "fetched (the API's and the workers' must match); unset: requests with `access_tokens` are refused."
        ),
    )
    public_url: str | None = field(
        default=None,
        metadata=_help(
            "External base URL (e.g. `https://collation.example.org`) used in annotation and manifest ids; unset: "
            "the URL of each request."
        ),
    )
    host: str = field(default="127.0.0.1", metadata=_help("Where `collate serve` listens (`--host` wins)."))
    port: int = field(default=8000, metadata=_help("Port of `collate serve` (`--port` wins; 0 picks a free one)."))
    queue_io: str = field(default="collation-io", metadata=_help("Queue of manifests, regions and final results."))
    queue_compute: str = field(
        default="collation-compute",
        metadata=_help("Queue of features, candidate pairs and pair scores (GPU workers listen here)."),
    )
    chunk_pairs: int = field(
        default=512, metadata=_help("Pairs per scoring job: about 10 s of CPU with efficientnet-lite0.")
    )
    job_timeout: int = field(default=3600, metadata=_help("Seconds one job may run."))
    job_retries: int = field(default=2, metadata=_help("Retries of a failed or abandoned job."))
    heartbeat_ttl: int = field(
        default=20, metadata=_help("Seconds after which a silent worker's job is abandoned and retried.")
    )
    sweep_interval: float = field(
        default=15.0,
        metadata=_help(
            "Seconds between the API's recovery sweeps (re-enqueue what Redis lost, retry dead workers' jobs); 0: "
            "one sweep at start only."
        ),
    )
    draft_days: float = field(
        default=30.0,
        metadata=_help(
            "Days after its last change that a draft of the New page (`/drafts`) or a detection for review "
            "(`/detections`) is removed, by the API's sweep (hourly) and by `collate store prune`; 0: kept."
        ),
    )
    max_body_bytes: int = field(
        default=256 * 2**10,
        metadata=_help("Largest request body in bytes; a larger one is refused with 413 before it is read."),
    )
    inspect_needs_token: bool = field(
        default=False,
        metadata=_help("`GET /inspect` needs a bearer token like POST (when `COLLATION_API_TOKENS` is set)."),
    )
    inspect_concurrency: int = field(
        default=4, metadata=_help("`GET /inspect` requests running at once; more are answered 503.")
    )
    inspect_per_client: int = field(
        default=1, metadata=_help("`GET /inspect` requests running at once per client address; more are answered 429.")
    )
    inspect_timeout: float = field(default=15.0, metadata=_help("Seconds one `GET /inspect` may fetch in all."))
    inspect_max_json_bytes: int = field(
        default=8 * 2**20, metadata=_help("Cap of the manifest `GET /inspect` reads (collations use the IIIF cap).")
    )
    inspect_max_json_items: int = field(
        default=500_000,
        metadata=_help("Cap of the values in the manifest `GET /inspect` reads (see `COLLATION_IIIF_MAX_JSON_ITEMS`)."),
    )
    callback_timeout: float = field(
        default=5.0, metadata=_help("Seconds one `callback_url` POST may take in all (a job of its own, retried).")
    )
    max_manifests: int = field(default=32, metadata=_help("Manifests per collation."))
    max_regions: int = field(default=5000, metadata=_help("Regions per manuscript."))
    max_regions_total: int = field(default=10_000, metadata=_help("Regions per collation, all manuscripts together."))
    max_pairs: int = field(default=5_000_000, metadata=_help("Region pairs per collation to score, x transpositions."))
    features_cached: int = field(default=8, metadata=_help("Feature sets a worker keeps in memory between jobs."))
    page_size: int = field(default=100, metadata=_help("Annotations per page of the AnnotationCollection."))
    cors_origin: str = field(default="*", metadata=_help("`Access-Control-Allow-Origin` of every response."))
    openapi_path: Path | None = field(
        default=None,
        metadata=_help("The contract served at `/api/v1/openapi.yaml`; unset: the `openapi.yaml` of the repository."),
    )
    log_level: str = field(default="INFO", metadata=_help("Log level of `collate serve` and `collate worker`."))
    log_format: str = field(
        default="text",
        metadata=_help("`text` or `json`: JSON lines with `collation_id`, `job_id` and `step` (docs/deployment.md)."),
    )
    metrics_need_token: bool = field(
        default=False, metadata=_help("`GET /metrics` needs a bearer token (when `COLLATION_API_TOKENS` is set).")
    )
    worker_metrics_port: int = field(
        default=0, metadata=_help("Port of a worker's Prometheus `/metrics` (serve's N workers: N ports); 0: none.")
    )
    client_max_active: int = field(default=10, metadata=_help("Unfinished collations of one token (or address)."))
    client_max_regions: int = field(default=20_000, metadata=_help("Regions listed by one client's running ones."))
    min_free_bytes: int = field(default=256 * 2**20, metadata=_help("Free disk a folder store keeps, else it is full."))
    worker_metrics_host: str = field(default="127.0.0.1", metadata=_help("Address of a worker's `/metrics`."))
    metrics_hosts: tuple[str, ...] = field(default=(), metadata=_help("IIIF hosts named in metrics; others: `other`."))
    iiif: FetchSettings = field(
        default_factory=FetchSettings,
        metadata=_help("IIIF fetching, one `COLLATION_IIIF_<NAME>` variable per field of `FetchSettings`."),
    )

    # ----------------------------------------------------------------------------------------------

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Defaults, then the ``COLLATION_*`` environment, then ``overrides`` (by field name).

        ``overrides`` may hold ``iiif`` as a ``FetchSettings`` or as a dict of its fields. Values of
        overrides are parsed like the environment's when they are strings.

        Raises:
            SettingsError: a value that does not parse, naming the variable.
        """
        environ = os.environ if environ is None else environ
        iiif_overrides = overrides.pop("iiif", None) or {}
        if isinstance(iiif_overrides, FetchSettings):
            iiif_overrides = dataclasses.asdict(iiif_overrides)
        iiif = _build(FetchSettings, environ, IIIF_PREFIX, iiif_overrides)
        settings = _build(cls, environ, ENV_PREFIX, overrides, iiif=iiif)
        settings.check()
        return settings

    def replace(self, **changes: Any) -> Settings:
        """A copy with ``changes`` (field values, not strings), checked again."""
        settings = dataclasses.replace(self, **changes)
        settings.check()
        return settings

    def check(self) -> None:
        """Raises ``SettingsError`` on values that parse but cannot work."""
        if self.device not in DEVICES and not self.device.startswith("cuda:"):
            raise SettingsError(
                f"{ENV_PREFIX}DEVICE must be auto, cpu, cuda or cuda:N, not {self.device!r}", field="DEVICE"
            )
        if self.log_level.upper() not in LOG_LEVELS:
            raise SettingsError(
                f"{ENV_PREFIX}LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}, not {self.log_level!r}",
                field="LOG_LEVEL",
            )
        if self.log_format not in LOG_FORMATS:
            raise SettingsError(
                f"{ENV_PREFIX}LOG_FORMAT must be text or json, not {self.log_format!r}", field="LOG_FORMAT"
            )
        if self.feature_precision not in PRECISIONS:
            message = f"must be {', '.join(PRECISIONS[:-1])} or {PRECISIONS[-1]}, not {self.feature_precision!r}"
            raise SettingsError(f"{ENV_PREFIX}FEATURE_PRECISION {message}", field="FEATURE_PRECISION")
        if not 0 <= self.worker_metrics_port <= 65535:
            raise SettingsError(f"{ENV_PREFIX}WORKER_METRICS_PORT must be 0..65535", field="WORKER_METRICS_PORT")
        for name in AT_LEAST_ONE:
            if getattr(self, name) < 1:
                raise SettingsError(f"{ENV_PREFIX}{name.upper()} must be at least 1", field=name.upper())
        for name in ("inspect_timeout", "callback_timeout", "store_connect_timeout", "store_read_timeout"):
            if getattr(self, name) <= 0:
                raise SettingsError(f"{ENV_PREFIX}{name.upper()} must be positive", field=name.upper())
        if not (math.isfinite(self.draft_days) and self.draft_days >= 0):
            raise SettingsError(f"{ENV_PREFIX}DRAFT_DAYS must be a number of days >= 0", field="DRAFT_DAYS")
        if self.store_retries < 0:
            raise SettingsError(f"{ENV_PREFIX}STORE_RETRIES must be at least 0", field="STORE_RETRIES")
        if self.store_url is not None and not re.fullmatch(
            r"s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?", self.store_url
        ):
            raise SettingsError(
                f"{ENV_PREFIX}STORE_URL must be s3://bucket or s3://bucket/prefix (a bucket name of 3-63 lower-case "
                f"letters, digits, dots and hyphens), not {self.store_url!r}",
                field="STORE_URL",
            )
        for name in ("per_host", "region_long_side", "max_canvases", "max_json_items"):
            if getattr(self.iiif, name) < 1:
                raise SettingsError(f"{IIIF_PREFIX}{name.upper()} must be at least 1", field=name.upper())

    def to_environ(self) -> dict[str, str]:
        """The ``COLLATION_*`` variables that give a child process (a worker) these settings."""
        env = _environ(self, ENV_PREFIX, skip=("iiif",))
        env.update(_environ(self.iiif, IIIF_PREFIX))
        return env


# --------------------------------------------------------------------------------------------------
# One parser per type


def parse_bool(raw: str) -> bool:
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ValueError("must be true or false (1/0, yes/no, on/off)")


def parse_int(raw: str) -> int:
    text = raw.strip()
    if not text.isascii():  # int() accepts other scripts' digits
        raise ValueError("must be an integer")
    return int(text)


def parse_float(raw: str) -> float:
    text = raw.strip()
    if not text.isascii():
        raise ValueError("must be a number")
    return float(text)


def parse_str(raw: str) -> str:
    return raw.strip()


def parse_optional_str(raw: str) -> str | None:
    return raw.strip() or None


def parse_path(raw: str) -> Path:
    if not raw.strip():
        raise ValueError("must be a path")
    return Path(raw.strip()).expanduser()


def parse_optional_path(raw: str) -> Path | None:
    return Path(raw.strip()).expanduser() if raw.strip() else None


def parse_list(raw: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in raw.split(",") if item.strip())


PARSERS: dict[Any, Callable[[str], Any]] = {
    bool: parse_bool,
    int: parse_int,
    float: parse_float,
    str: parse_str,
    str | None: parse_optional_str,
    Path: parse_path,
    Path | None: parse_optional_path,
    tuple[str, ...]: parse_list,
}
"""The parser of each field type."""


def _field_types(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, globalns={**globals(), "Path": Path}, localns={"FetchSettings": FetchSettings})


def _parser(tp: Any) -> Callable[[str], Any]:
    for known, parser in PARSERS.items():
        if tp == known or (
            isinstance(tp, types.UnionType)
            and isinstance(known, types.UnionType)
            and set(typing.get_args(tp)) == set(typing.get_args(known))
        ):
            return parser
    raise TypeError(f"no parser for settings of type {tp}")


def _coerce(value: Any, tp: Any) -> Any:
    """Override values as given in code: strings are parsed, sequences become tuples, paths Paths."""
    if isinstance(value, str):
        return _parser(tp)(value)
    if tp == tuple[str, ...] and value is not None:
        return tuple(value)
    if tp in (Path, Path | None) and value is not None:
        return Path(value).expanduser()
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _build(cls: type, environ: Mapping[str, str], prefix: str, overrides: Mapping[str, Any], **fixed: Any) -> Any:
    hints = _field_types(cls)
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise SettingsError(f"unknown settings {unknown}; known: {sorted(names)}", field=unknown[0])
    values: dict[str, Any] = dict(fixed)
    for f in fields(cls):
        if f.name in fixed:
            continue
        variable = prefix + f.name.upper()
        try:
            if f.name in overrides:
                values[f.name] = _coerce(overrides[f.name], hints[f.name])
            elif variable in environ:
                values[f.name] = _parser(hints[f.name])(environ[variable])
        except ValueError as exc:
            raw = overrides.get(f.name, environ.get(variable))
            raise SettingsError(f"{variable}={raw!r}: {exc}", field=variable) from None
    return cls(**values)


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


def _environ(obj: Any, prefix: str, skip: tuple[str, ...] = ()) -> dict[str, str]:
    return {
        prefix + f.name.upper(): _format(getattr(obj, f.name))
        for f in fields(obj)
        if f.name not in skip and getattr(obj, f.name) is not None
    }


# --------------------------------------------------------------------------------------------------
# The README table


def _default_text(f: dataclasses.Field) -> str:
    """A field's default as the table shows it: ``unset``, nothing (a nested group), or in backquotes."""
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return ""
    if f.default is None or f.default == ():
        return "unset"
    return f"`{_format(f.default)}`"


def settings_table() -> str:
    """The Markdown table of every variable, its default and its meaning (the README's): one row per field
    of ``Settings`` and of ``FetchSettings`` (its ``iiif`` group)."""
    lines = ["| Variable | Default | Meaning |", "|---|---|---|"]
    for prefix, cls in ((ENV_PREFIX, Settings), (IIIF_PREFIX, FetchSettings)):
        for f in dataclasses.fields(cls):
            if f.name != "iiif":
                lines.append(f"| `{prefix}{f.name.upper()}` | {_default_text(f)} | {f.metadata['help']} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(settings_table(), end="")
