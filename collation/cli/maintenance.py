"""``collate store`` (the data store's formats, its migration, the retention of cached work) and
``collate health`` (is this container's process alive: the API's port, or a worker's heartbeat).

``collation.cli.main`` adds them with ``add_subcommands(subparsers)``. Both read the process's settings
(``args.settings``, the ``COLLATION_*`` environment), so they see the store and Redis the service does.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from collation.core.formats import STORE_FORMAT
from collation.core.settings import Settings

EXIT_UNHEALTHY = 1
EXIT_UNREADABLE = 3
"""``collate store check``: some object (or the store) is in a format this release does not read, or is
damaged (each is named; never a traceback)."""


def add_subcommands(subparsers: Any) -> None:
    """Adds ``store`` (check, migrate, prune) and ``health`` to an argparse subparsers object."""
    store = subparsers.add_parser(
        "store",
        help="the data store: its formats, their migration, the retention of cached work",
        description="Reports and migrates the format of the data store (COLLATION_DATA_DIR or "
        "COLLATION_STORE_URL), and removes cached work not used for a while (docs/operations.md).",
    )
    actions = store.add_subparsers(dest="action", required=True)
    check = actions.add_parser("check", help="the store's format and its objects by kind and format")
    check.add_argument("--json", action="store_true", help="print one JSON object")
    check.set_defaults(handler=cmd_check)
    migrate = actions.add_parser(
        "migrate", help=f"rewrite every object of an older format in format {STORE_FORMAT} (workers stopped)"
    )
    migrate.add_argument("--json", action="store_true", help="print the inventory after, as JSON")
    migrate.set_defaults(handler=cmd_migrate)
    prune = actions.add_parser(
        "prune",
        help="remove cached features and scores not used for a while (folder store), and drafts older than "
        "COLLATION_STORE_DRAFT_DAYS",
    )
    prune.add_argument(
        "--older-than", type=float, required=True, metavar="DAYS", help="remove what was not used for DAYS days"
    )
    prune.add_argument("--dry-run", action="store_true", help="list what would be removed, remove nothing")
    prune.set_defaults(handler=cmd_prune)

    health = subparsers.add_parser(
        "health",
        help="exit 0 when this machine's API answers, or with --worker when its worker sends heartbeats",
        description="A container health check. Without --worker: GET /api/v1/healthz on the port that "
        "`collate serve` of this host and data folder listens on (it records it in "
        "COLLATION_DATA_DIR/.serve-HOSTNAME.json; else --port, else COLLATION_PORT). With --worker: a "
        "worker registered in Redis from this host (its hostname) sent a heartbeat recently.",
    )
    health.add_argument("--worker", action="store_true", help="check this host's RQ worker, not the API")
    health.add_argument(
        "--port", type=int, help="the API's port (default: the one `collate serve` recorded, else COLLATION_PORT)"
    )
    health.add_argument("--name", help="with --worker: only the worker of this name")
    health.add_argument(
        "--max-age",
        type=float,
        metavar="SECONDS",
        help="with --worker: the oldest heartbeat that counts (default: the worker's own time to live, "
        "COLLATION_HEARTBEAT_TTL + 16)",
    )
    health.add_argument("--timeout", type=float, default=4.0, help="seconds to wait for an answer (default 4)")
    health.set_defaults(handler=cmd_health)


def _store(settings: Settings):
    from collation.store.location import open_store

    return open_store(settings)


def print_inventory(found: Any) -> None:
    """The inventory of ``collation.store.migration`` as a few readable lines."""
    marker = "format.json" if found.marker is not None else "no format.json: written before formats had numbers"
    print(f"store format {found.store_format} ({marker}); this release writes format {STORE_FORMAT}")
    for kind, counts in found.counts.items():
        described = ", ".join(
            f"{n} in format {f}" if isinstance(f, int) else f"{n} ({f})" for f, n in sorted(counts.items(), key=str)
        )
        print(f"  {kind}: {described}")
    for key, reason in found.unreadable.items():
        print(f"  unreadable: {reason if key in reason else f'{key}: {reason}'}")
    if found.other:
        print(f"  {len(found.other)} other files left alone (e.g. {found.other[0]})")


def cmd_check(args: argparse.Namespace) -> int:
    from collation.store.migration import inventory

    found = inventory(_store(args.settings))
    if args.json:
        print(json.dumps(found.to_json()))
    else:
        print_inventory(found)
        if found.unreadable:
            print(
                "Some objects cannot be read by this release (listed above): one written by a newer release "
                "needs that release; a damaged one, its collation deleted or restored from a backup. The "
                "service skips them (GET /collations, /metrics) and names them in its log."
            )
        elif not found.current:
            print(f"Readable as it is; `collate store migrate` (workers stopped) brings it to format {STORE_FORMAT}.")
    return EXIT_UNREADABLE if found.unreadable else 0


def cmd_migrate(args: argparse.Namespace) -> int:
    from collation.store.migration import migrate

    rewritten: list[str] = []
    found = migrate(_store(args.settings), progress=rewritten.append)
    if args.json:
        print(json.dumps({**found.to_json(), "rewritten": len(rewritten)}))
    else:
        print(f"{len(rewritten)} objects rewritten in format {STORE_FORMAT}")
        print_inventory(found)
    return EXIT_UNREADABLE if found.unreadable else 0


def cmd_prune(args: argparse.Namespace) -> int:
    from collation.store.retention import expire_drafts, prune

    store, days = _store(args.settings), args.settings.store.draft_days
    drafts = expire_drafts(store, days, dry_run=args.dry_run)
    done = prune(store, args.older_than, dry_run=args.dry_run)
    verb = "would remove" if args.dry_run else "removed"
    for key in drafts if args.dry_run else ():
        print(key)
    if days:
        print(f"{verb} {len(drafts)} drafts and detections for review unchanged for {days:g} days (DRAFT_DAYS)")
    for key in done.removed if args.dry_run else ():
        print(key)
    for key, reason in done.unreadable.items():
        print(f"skipped unreadable: {reason if key in reason else f'{key}: {reason}'}", file=sys.stderr)
    print(
        f"{verb} {len(done.removed)} cached files ({done.removed_bytes / 2**20:.1f} MiB); kept "
        f"{done.kept_recent} used in the last {args.older_than:g} days and {done.kept_in_use} that unfinished "
        "collations need"
    )
    return 0


def cmd_health(args: argparse.Namespace) -> int:
    settings: Settings = args.settings
    if args.worker:
        from collation.jobs.heartbeats import worker_health

        healthy, message = worker_health(settings, name=args.name, max_age=args.max_age, timeout=args.timeout)
    else:
        healthy, message = api_health(settings, args.timeout, port=args.port)
    print(message, file=sys.stdout if healthy else sys.stderr)
    return 0 if healthy else EXIT_UNHEALTHY


def api_health(settings: Settings, timeout: float, port: int | None = None) -> tuple[bool, str]:
    """(healthy, message): whether the API of this machine answers ``GET /api/v1/healthz``: on ``port``,
    else where ``collate serve`` of this host and data folder recorded it listens (``serve --port``, or
    the free port ``--port 0`` picked), else on ``COLLATION_PORT``."""
    import urllib.error
    import urllib.request

    from collation.cli.serve import address_record, recorded_address

    host = "127.0.0.1"
    if port is None:
        record = recorded_address(address_record(settings)) or {"host": host, "port": settings.port}
        host, port = reachable_host(str(record.get("host"))), record["port"]
    url = f"http://{host}:{port}/api/v1/healthz"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status == 200, f"{url}: {response.status}"
    except (OSError, urllib.error.URLError) as exc:
        return False, f"{url}: {exc}"


def reachable_host(bound: str) -> str:
    """The address to reach a server bound to ``bound`` from this machine: loopback for the wildcard
    addresses, the address or name itself otherwise (brackets around IPv6)."""
    import ipaddress

    try:
        address = ipaddress.ip_address(bound)
    except ValueError:  # a name: the address it resolves to is the one bound
        return bound or "127.0.0.1"
    if address.is_unspecified:
        return "127.0.0.1" if address.version == 4 else "[::1]"
    return f"[{address}]" if address.version == 6 else str(address)
