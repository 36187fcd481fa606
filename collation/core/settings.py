"""Every setting of the project, parsed once from the environment: the one settings surface.

``Settings.from_env()`` reads one ``COLLATION_*`` variable per field, with one parser per type, and
raises ``SettingsError`` naming the variable when a value does not parse or is out of its bounds. The
fields come in groups that follow who reads them: ``store`` (the data store), ``inspection`` (``GET
/inspect``), ``limits`` (what one request or client may ask), ``workers`` (queues and jobs) and
``iiif`` (fetching); the rest concern the whole process. A field's variable is its group's prefix and
its name (``COLLATION_STORE_URL`` is ``store.url``) unless the field names an older variable. Every
default and bound is on its field, next to its help text; the README's configuration table is
generated from these fields (``python -m collation.core.settings``) and a test checks that the two
agree.

The API process, the workers and the command line all build one ``Settings`` and pass it down:
nothing else in the package reads ``COLLATION_*`` variables.

Longer than 400 lines because every setting lives here with its default, bounds and help text, next to
the parsers and the README table generated from them: a split would put the table's rows away from the
fields they describe.
"""

from __future__ import annotations

import dataclasses
import os
import re
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

from collation.core import defaults
from collation.core.errors import InputError
from collation.core.options import PRECISIONS

ENV_PREFIX = "COLLATION_"
USER_AGENT = "image-collation/0.1"

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class SettingsError(InputError):
    """A ``COLLATION_*`` variable (or an override) has a value that cannot be used."""


def setting(
    default: Any,
    help: str,
    *,
    variable: str | None = None,
    at_least: float | None = None,
    above: float | None = None,
    at_most: float | None = None,
    one_of: tuple[str, ...] | None = None,
    pattern: tuple[str, str] | None = None,
    secret: bool = False,
) -> Any:
    """A settings field: its default, its help text (the README's), and its bounds.

    ``variable`` names a variable that does not follow the group's prefix (kept from before the
    groups); ``pattern`` is ``(regex, what it means)``; ``secret`` keeps the value out of ``repr``.
    """
    metadata = {"help": help, "variable": variable, "at_least": at_least, "above": above, "at_most": at_most}
    metadata.update(one_of=one_of, pattern=pattern)
    return field(default=default, repr=not secret, metadata=metadata)


def group(cls: type) -> Any:
    """A field holding a settings group, built from its own defaults."""
    return field(default_factory=cls, metadata={"group": True})


# --------------------------------------------------------------------------------------------------
# The groups


@dataclass(frozen=True)
class FetchSettings:
    """How IIIF documents and images are fetched: politeness, limits and the address policy."""

    PREFIX: ClassVar[str] = "COLLATION_IIIF_"

    user_agent: str = setting(USER_AGENT, "User-Agent of every request.")
    connect_timeout: float = setting(10.0, "Seconds to open a connection.", above=0)
    read_timeout: float = setting(30.0, "Seconds between two reads of a body.", above=0)
    total_timeout: float = setting(120.0, "Seconds for one whole response.", above=0)
    retries: int = setting(3, "Further attempts after a 429, a 5xx or a connection error.", at_least=0)
    backoff: float = setting(1.0, "First back-off in seconds, doubled on each retry.", at_least=0)
    max_retry_after: float = setting(60.0, "Longest Retry-After honoured; longer ones fail.", at_least=0)
    max_redirects: int = setting(5, "Redirects followed per request, each checked.", at_least=0)
    per_host: int = setting(4, "Concurrent requests per host.", at_least=1)
    min_interval: float = setting(
        0.0, "Seconds between two request starts on one host (e.g. 12 for Gallica).", at_least=0
    )
    cache_dir: Path | None = setting(
        None,
        "On-disk cache of fetched documents and images; unset: memory only (the command line uses "
        "`$XDG_CACHE_HOME/image-collation/iiif`).",
    )
    json_cache_entries: int = setting(512, "Parsed JSON documents kept in memory.", at_least=0)
    json_cache_bytes: int = setting(
        64 * 2**20,
        "Memory the parsed JSON documents kept may take, in bytes (a parsed document takes 10-25 times its "
        "JSON text; larger ones are not kept).",
        at_least=0,
    )
    max_json_bytes: int = setting(32 * 2**20, "Cap of one manifest, list or info.json.", at_least=1)
    max_json_items: int = setting(
        4_000_000,
        "Cap of the values in one JSON document (its `{`, `[` and `,` bytes, counted before it is parsed).",
        at_least=1,
    )
    max_image_bytes: int = setting(64 * 2**20, "Cap of one image response.", at_least=1)
    max_image_pixels: int = setting(100_000_000, "Cap of one decoded image.", at_least=1)
    max_decoded_bytes: int = setting(2**30, "Cap of the memory one image takes decoded.", at_least=1)
    max_canvases: int = setting(10_000, "Canvases read from one manifest.", at_least=1)
    region_long_side: int = setting(
        352, "Long side in pixels of fetched region images (the features need 22 cells of 16 px).", at_least=1
    )
    allow_private: bool = setting(
        False, "Fetch from private, loopback and link-local addresses too (never on a public service)."
    )


def default_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/image-collation/iiif`` (``~/.cache/...`` when unset): where the command line
    keeps fetched manifests and images between runs when ``COLLATION_IIIF_CACHE_DIR`` is unset."""
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "image-collation" / "iiif"


@dataclass(frozen=True)
class StoreSettings:
    """The data store: the object store that may hold it, how it is asked, and the disk a folder keeps free."""

    PREFIX: ClassVar[str] = "COLLATION_STORE_"

    url: str | None = setting(
        None,
        "`s3://bucket/prefix`: keep the data store in an S3-compatible object store, for API and workers on "
        "machines that share no disk (credentials from `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`, or "
        "boto3's other usual sources). Unset: the folder `COLLATION_DATA_DIR`.",
        pattern=(
            r"s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?",
            "s3://bucket or s3://bucket/prefix (a bucket name of 3-63 lower-case letters, digits, dots and hyphens)",
        ),
    )
    endpoint: str | None = setting(
        None, "URL of the object store's S3 API (SeaweedFS, MinIO, Ceph...); unset: `AWS_ENDPOINT_URL`, else AWS."
    )
    cache_bytes: int = setting(
        8 * 2**30,
        "Bytes of features and region images a process keeps in its local cache of the object store.",
        at_least=1,
    )
    connect_timeout: float = setting(2.0, "Seconds to connect to the object store.", above=0)
    read_timeout: float = setting(
        5.0,
        "Seconds to wait for an answer of the object store; after a wait that long it is not asked again for as "
        "long (requests fail at once: the API answers 503 naming it instead of waiting on it in every thread).",
        above=0,
    )
    retries: int = setting(1, "Further attempts of an object-store request after a 5xx.", at_least=0)
    min_free_bytes: int = setting(
        256 * 2**20, "Free disk a folder store keeps, else it is full.", variable="COLLATION_MIN_FREE_BYTES", at_least=0
    )
    draft_days: float = setting(
        30.0,
        "Days after its last change that a draft of the New page (`/drafts`) or a detection for review "
        "(`/detections`) is removed, by the API's sweep (hourly) and by `collate store prune`; 0: kept.",
        at_least=0,
        at_most=36500,
    )


@dataclass(frozen=True)
class InspectionSettings:
    """``GET /inspect``: a manifest looked at before a collation, from the workspace's New page."""

    PREFIX: ClassVar[str] = "COLLATION_INSPECT_"

    needs_token: bool = setting(
        False, "`GET /inspect` needs a bearer token like POST (when `COLLATION_API_TOKENS` is set)."
    )
    concurrency: int = setting(4, "`GET /inspect` requests running at once; more are answered 503.", at_least=1)
    per_client: int = setting(
        1, "`GET /inspect` requests running at once per client address; more are answered 429.", at_least=1
    )
    timeout: float = setting(15.0, "Seconds one `GET /inspect` may fetch in all.", above=0)
    max_json_bytes: int = setting(
        8 * 2**20, "Cap of the manifest `GET /inspect` reads (collations use the IIIF cap).", at_least=1
    )
    max_json_items: int = setting(
        500_000,
        "Cap of the values in the manifest `GET /inspect` reads (see `COLLATION_IIIF_MAX_JSON_ITEMS`).",
        at_least=1,
    )


@dataclass(frozen=True)
class LimitSettings:
    """What one request, one collation and one client may ask of the service."""

    PREFIX: ClassVar[str] = "COLLATION_"

    max_body_bytes: int = setting(
        256 * 2**10, "Largest request body in bytes; a larger one is refused with 413 before it is read.", at_least=1
    )
    max_manifests: int = setting(32, "Manifests per collation.", at_least=2)
    max_regions: int = setting(5000, "Regions per manuscript.", at_least=1)
    max_regions_total: int = setting(10_000, "Regions per collation, all manuscripts together.", at_least=1)
    max_pairs: int = setting(5_000_000, "Region pairs per collation to score, x transpositions.", at_least=1)
    client_max_active: int = setting(10, "Unfinished collations of one token (or address).", at_least=1)
    client_max_regions: int = setting(20_000, "Regions listed by one client's running ones.", at_least=1)


@dataclass(frozen=True)
class WorkerSettings:
    """The queues, the jobs on them and the workers that run them."""

    PREFIX: ClassVar[str] = "COLLATION_"

    queue_io: str = setting("collation-io", "Queue of manifests, regions and final results.")
    queue_compute: str = setting(
        "collation-compute", "Queue of features, candidate pairs and pair scores (GPU workers listen here)."
    )
    chunk_pairs: int = setting(512, "Pairs per scoring job: about 10 s of CPU with efficientnet-lite0.", at_least=1)
    job_timeout: int = setting(3600, "Seconds one job may run.", at_least=1)
    job_retries: int = setting(2, "Retries of a failed or abandoned job.", at_least=0)
    heartbeat_ttl: int = setting(20, "Seconds after which a silent worker's job is abandoned and retried.", at_least=1)
    sweep_interval: float = setting(
        15.0,
        "Seconds between the API's recovery sweeps (re-enqueue what Redis lost, retry dead workers' jobs); 0: "
        "one sweep at start only.",
        at_least=0,
    )
    callback_timeout: float = setting(
        5.0, "Seconds one `callback_url` POST may take in all (a job of its own, retried).", above=0
    )
    features_cached: int = setting(8, "Feature sets a worker keeps in memory between jobs.", at_least=1)
    metrics_port: int = setting(
        0,
        "Port of a worker's Prometheus `/metrics` (serve's N workers: N ports); 0: none.",
        variable="COLLATION_WORKER_METRICS_PORT",
        at_least=0,
        at_most=65535,
    )
    metrics_host: str = setting(
        "127.0.0.1", "Address of a worker's `/metrics`.", variable="COLLATION_WORKER_METRICS_HOST"
    )


@dataclass(frozen=True)
class Settings:
    """The settings of one process: its own fields, then one field per group."""

    PREFIX: ClassVar[str] = ENV_PREFIX

    redis_url: str | None = setting(
        None, "Redis of the queues. Unset: `collate serve` starts a private one. Workers need it."
    )
    data_dir: Path = setting(
        Path("data"),
        "The data store: collations, region images, cached features and scores, shared by the API and all "
        "workers. With `COLLATION_STORE_URL`: this machine's own cache of what it reads from the object store.",
    )
    device: str = setting(
        "auto",
        "`auto` (CUDA when present), `cpu`, `cuda` or `cuda:N` for feature extraction and scoring.",
        pattern=(r"auto|cpu|cuda(:[0-9]+)?", "auto, cpu, cuda or cuda:N"),
    )
    backbone: str = setting(
        defaults.BACKBONE,
        "Default of the `backbone` option (`resnet50-conv4` is the paper's; it needs its weights).",
    )
    feature_precision: str = setting(
        "auto", "Features' arithmetic: `auto` (bfloat16 where native), `float32`, `bfloat16`.", one_of=PRECISIONS
    )
    weights_dir: Path | None = setting(None, "Folder with `resnet50-0676ba61.pth` (else the torch cache).")
    detector_model: Path | None = setting(
        None,
        "TorchScript illustration detector for pages without region annotations (contract in docs/detection.md); "
        "unset: the built-in image-analysis detector.",
    )
    detector_min_score: float = setting(
        0.5, "Detected illustrations scoring lower (0..1) are dropped.", at_least=0, at_most=1
    )
    allowed_hosts: tuple[str, ...] = setting(
        (),
        "Comma-separated hosts that may be fetched although they resolve to private or loopback addresses, e.g. "
        "`127.0.0.1` for a local image server. Everything else private is refused.",
    )
    api_tokens: tuple[str, ...] = setting(
        (),
        "Comma-separated bearer tokens. When set, POST and DELETE need `Authorization: Bearer <token>`; reads "
        "stay open for viewers.",
    )
    access_token_key: str = setting(
        "",
        "Secret (any text) that encrypts the IIIF Auth 2 access tokens a request carries while its images are "
        "fetched (the API's and the workers' must match); unset: requests with `access_tokens` are refused.",
        secret=True,
    )
    public_url: str | None = setting(
        None,
        "External base URL (e.g. `https://collation.example.org`) used in annotation and manifest ids; unset: the "
        "URL of each request.",
    )
    host: str = setting("127.0.0.1", "Where `collate serve` listens (`--host` wins).")
    port: int = setting(8000, "Port of `collate serve` (`--port` wins; 0 picks a free one).", at_least=0, at_most=65535)
    page_size: int = setting(100, "Annotations per page of the AnnotationCollection.", at_least=1)
    cors_origin: str = setting("*", "`Access-Control-Allow-Origin` of every response.")
    openapi_path: Path | None = setting(
        None, "The contract served at `/api/v1/openapi.yaml`; unset: the `openapi.yaml` of the repository."
    )
    log_level: str = setting(
        "INFO",
        "Log level of `collate serve` and `collate worker`.",
        pattern=("(?i)" + "|".join(LOG_LEVELS), "one of " + ", ".join(LOG_LEVELS)),
    )
    log_format: str = setting(
        "text",
        "`text` or `json`: JSON lines with `collation_id`, `job_id` and `step` (docs/deployment.md).",
        one_of=("text", "json"),
    )
    metrics_need_token: bool = setting(
        False, "`GET /metrics` needs a bearer token (when `COLLATION_API_TOKENS` is set)."
    )
    metrics_hosts: tuple[str, ...] = setting((), "IIIF hosts named in metrics; others: `other`.")
    store: StoreSettings = group(StoreSettings)
    inspection: InspectionSettings = group(InspectionSettings)
    limits: LimitSettings = group(LimitSettings)
    workers: WorkerSettings = group(WorkerSettings)
    iiif: FetchSettings = group(FetchSettings)

    # ----------------------------------------------------------------------------------------------

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Defaults, then the ``COLLATION_*`` environment, then ``overrides``.

        An override is named like its variable, without ``COLLATION_`` and in lower case
        (``chunk_pairs=8``, ``store_url="s3://b"``, ``iiif_per_host=2``), or is a whole group by its
        field name (``iiif={"per_host": 2}`` or a ``FetchSettings``). String values are parsed like the
        environment's.

        Raises:
            SettingsError: a value that does not parse or is out of its bounds, naming the variable.
        """
        environ = os.environ if environ is None else environ
        values = {variable: raw for variable, raw in environ.items() if variable.startswith(ENV_PREFIX)}
        settings = _build(cls, values, _by_variable(overrides))
        settings.check()
        return settings

    def replace(self, **changes: Any) -> Settings:
        """A copy with ``changes`` (named as ``from_env``'s overrides), checked again."""
        by_group: dict[str | None, dict[str, Any]] = {}
        for variable, value in _by_variable(changes).items():
            group_name, name = _VARIABLES[variable]
            by_group.setdefault(group_name, {})[name] = value
        top = by_group.pop(None, {})
        for group_name, group_changes in by_group.items():
            top[group_name] = dataclasses.replace(getattr(self, group_name), **group_changes)
        settings = dataclasses.replace(self, **top)
        settings.check()
        return settings

    def check(self) -> None:
        """Raises ``SettingsError`` on a value out of its field's bounds, naming its variable."""
        for owner, f, variable in _fields(self):
            problem = _out_of_bounds(getattr(owner, f.name), f.metadata)
            if problem:
                raise SettingsError(f"{variable} must be {problem}", field=variable)

    def to_environ(self) -> dict[str, str]:
        """The ``COLLATION_*`` variables that give a child process (a worker) these settings."""
        return {
            variable: _format(getattr(owner, f.name))
            for owner, f, variable in _fields(self)
            if getattr(owner, f.name) is not None
        }


GROUPS = ("store", "inspection", "limits", "workers", "iiif")
"""The names of ``Settings``' groups, in the README table's order."""


# --------------------------------------------------------------------------------------------------
# Fields, variables and bounds


def _variable(prefix: str, f: dataclasses.Field) -> str:
    return f.metadata.get("variable") or prefix + f.name.upper()


def _leaves(cls: type) -> Iterator[tuple[str | None, dataclasses.Field, str]]:
    """``(group or None, field, variable)`` for every setting of ``Settings``, top-level ones first."""
    for f in fields(cls):
        if not f.metadata.get("group"):
            yield None, f, _variable(cls.PREFIX, f)
    for name in GROUPS:
        group_cls = _field_types(cls)[name]
        for f in fields(group_cls):
            yield name, f, _variable(group_cls.PREFIX, f)


def _fields(settings: Settings) -> Iterator[tuple[Any, dataclasses.Field, str]]:
    """``(object holding it, field, variable)`` for every setting of ``settings``."""
    for group_name, f, variable in _leaves(Settings):
        yield (settings if group_name is None else getattr(settings, group_name)), f, variable


def _by_variable(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Overrides keyed by their variable: a whole group's fields, or one setting by its lower-case name."""
    out: dict[str, Any] = {}
    for key, value in overrides.items():
        if key in GROUPS:
            group_cls = _field_types(Settings)[key]
            items = dataclasses.asdict(value) if dataclasses.is_dataclass(value) else dict(value)
            known = {f.name: f for f in fields(group_cls)}
            unknown = sorted(set(items) - set(known))
            if unknown:
                raise SettingsError(f"unknown settings {unknown} in {key}; known: {sorted(known)}", field=unknown[0])
            out.update({_variable(group_cls.PREFIX, known[name]): v for name, v in items.items()})
        elif ENV_PREFIX + key.upper() in _VARIABLES:
            out[ENV_PREFIX + key.upper()] = value
        else:
            known = sorted(v.removeprefix(ENV_PREFIX).lower() for v in _VARIABLES)
            raise SettingsError(f"unknown settings [{key!r}]; known: {known} and the groups {list(GROUPS)}", field=key)
    return out


def _out_of_bounds(value: Any, metadata: Mapping[str, Any]) -> str | None:
    """What ``value`` must be, when it is not (``None`` when it is within its field's bounds)."""
    if value is None:
        return None
    if metadata.get("at_least") is not None and value < metadata["at_least"]:
        return f"at least {metadata['at_least']:g}"
    if metadata.get("above") is not None and value <= metadata["above"]:
        return "positive" if metadata["above"] == 0 else f"above {metadata['above']:g}"
    if metadata.get("at_most") is not None and value > metadata["at_most"]:
        return f"at most {metadata['at_most']:g}"
    if metadata.get("one_of") and value not in metadata["one_of"]:
        choices = metadata["one_of"]
        return f"{', '.join(choices[:-1])} or {choices[-1]}, not {value!r}"
    if metadata.get("pattern") and not re.fullmatch(metadata["pattern"][0], value):
        return f"{metadata['pattern'][1]}, not {value!r}"
    return None


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
    return typing.get_type_hints(cls, globalns={**globals(), "Path": Path})


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


def _build(cls: type, environ: Mapping[str, str], overrides: Mapping[str, Any]) -> Settings:
    """``cls`` from the variables of ``environ`` (raw text), then ``overrides`` (by variable, values)."""
    values: dict[str | None, dict[str, Any]] = {None: {}, **{name: {} for name in GROUPS}}
    for group_name, f, variable in _leaves(cls):
        tp = _field_types(cls if group_name is None else _field_types(cls)[group_name])[f.name]
        try:
            if variable in overrides:
                values[group_name][f.name] = _coerce(overrides[variable], tp)
            elif variable in environ:
                values[group_name][f.name] = _parser(tp)(environ[variable])
        except ValueError as exc:
            raw = overrides.get(variable, environ.get(variable))
            raise SettingsError(f"{variable}={raw!r}: {exc}", field=variable) from None
    groups = {name: _field_types(cls)[name](**values[name]) for name in GROUPS}
    return cls(**values[None], **groups)


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


_VARIABLES: dict[str, tuple[str | None, str]] = {variable: (g, f.name) for g, f, variable in _leaves(Settings)}
"""Every variable, with the group (``None``: top level) and the field it sets."""


# --------------------------------------------------------------------------------------------------
# The README table


def _default_text(f: dataclasses.Field) -> str:
    """A field's default as the table shows it: ``unset`` or in backquotes."""
    if f.default is None or f.default == ():
        return "unset"
    return f"`{_format(f.default)}`"


def settings_table() -> str:
    """The README's Markdown tables of every variable, its default and its meaning: the process's own
    settings, then one table per group, under the first line of the group's docstring."""
    header = ["| Variable | Default | Meaning |", "|---|---|---|"]
    lines = list(header)
    current: str | None = None
    for group_name, f, variable in _leaves(Settings):
        if group_name != current:
            current = group_name
            title = (_field_types(Settings)[group_name].__doc__ or "").strip().splitlines()[0]
            lines += ["", f"`{group_name}`: {title}", "", *header]
        lines.append(f"| `{variable}` | {_default_text(f)} | {f.metadata['help']} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(settings_table(), end="")
