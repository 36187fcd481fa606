"""``collate serve`` and ``collate worker``: the service's two commands.

``collation.cli.main`` adds them to the ``collate`` command with ``add_subcommands(subparsers)``.
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import json
import logging
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from collation.core.settings import ENV_PREFIX, Settings, SettingsError

log = logging.getLogger("collation.service")

EXIT_STORE_REFUSED = 3
"""``collate worker``: the data store refused the worker's credentials (or has no such bucket)."""


def add_subcommands(subparsers: Any) -> None:
    """Adds ``serve`` and ``worker`` to an argparse subparsers object (each sets ``handler``)."""
    serve = subparsers.add_parser(
        "serve",
        help="run the collation API (and, without COLLATION_REDIS_URL, a private Redis and a worker)",
        description="Runs the REST API. Without COLLATION_REDIS_URL it also starts a private redis-server "
        "under COLLATION_DATA_DIR and worker processes, so it works on one machine with nothing "
        "else running.",
    )
    serve.add_argument("--host", help="address to bind (default COLLATION_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default COLLATION_PORT or 8000; 0 picks a free one)")
    serve.add_argument(
        "--workers", type=int, default=None, help="worker processes to start (default: 1 with a private Redis, else 0)"
    )
    serve.set_defaults(handler=run_serve)

    worker = subparsers.add_parser(
        "worker",
        help="run an RQ worker on the collation queues",
        description="Runs a non-forking RQ worker that keeps its backbone loaded between jobs.",
    )
    worker.add_argument("--burst", action="store_true", help="quit when the queues are empty")
    worker.add_argument(
        "--queues",
        default=None,
        help="io, compute or both (default io,compute; compute alone with --device cuda...): GPU workers "
        "take compute only, io workers fetch on the CPU",
    )
    worker.add_argument(
        "--device",
        help="this worker's compute device, cpu, cuda or cuda:N (default COLLATION_DEVICE): one compute "
        "worker per GPU, each with --device cuda:N",
    )
    worker.add_argument("--name", help="worker name (default: random)")
    worker.set_defaults(handler=run_worker)


def run_worker(args: argparse.Namespace) -> int:
    """``collate worker [--burst] [--queues io,compute] [--device cuda:N]``."""
    from collation.jobs.tasks import StoreRefused
    from collation.jobs.worker import work

    settings = Settings.from_env()
    _logging(settings)
    if not settings.redis_url:
        log.error("COLLATION_REDIS_URL is not set: a worker needs the service's Redis")
        return 2
    try:
        settings, queues = worker_placement(settings, getattr(args, "device", None), getattr(args, "queues", None))
    except SettingsError as exc:
        log.error("Worker not started: %s", exc.message)
        return 2
    try:
        work(settings, queues, burst=bool(getattr(args, "burst", False)), name=getattr(args, "name", None))
    except StoreRefused as exc:
        log.error("Worker not started: %s", exc.message)
        return EXIT_STORE_REFUSED
    return 0


def worker_placement(settings: Settings, device: str | None, queues: str | None) -> tuple[Settings, list[str]]:
    """The settings and queue kinds of a worker started with ``--device`` and ``--queues``: the device
    replaces ``COLLATION_DEVICE``, and a worker on a CUDA device listens on the compute queue alone unless
    ``--queues`` says otherwise (one compute worker per GPU; io workers run apart, on the CPU).

    Raises:
        SettingsError: a device other than auto, cpu, cuda or cuda:N.
    """
    if device:
        settings = settings.replace(device=device)
    if queues is None:
        queues = "compute" if device and device.startswith("cuda") else "io,compute"
    return settings, [q.strip() for q in queues.split(",") if q.strip()]


def run_serve(args: argparse.Namespace) -> int:
    """``collate serve [--host H] [--port P]``: the API, plus a private Redis and workers when needed."""
    from collation.app import create_app
    from collation.cli import private_servers as local
    from collation.service.serving import make_server
    from collation.service.state import service_state

    overrides = {
        name: value
        for name, value in (("host", getattr(args, "host", None)), ("port", getattr(args, "port", None)))
        if value is not None
    }
    settings = Settings.from_env(**overrides)
    _logging(settings)
    redis_process = None
    workers: list[subprocess.Popen] = []
    asked: set[int] = set()
    n_workers = getattr(args, "workers", None)
    try:
        if not settings.redis_url:
            redis_process, redis_url = local.start_redis(settings.data_dir / "redis")
            settings = settings.replace(redis_url=redis_url)
            log.info("Started a private redis-server at %s", redis_url)
            n_workers = 1 if n_workers is None else n_workers
        inherited = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
        env = {**inherited, **settings.to_environ()}  # the workers get exactly these settings
        for i in range(n_workers or 0):
            workers.append(subprocess.Popen([sys.executable, "-m", "collation", "worker"], env=worker_env(env, i)))
        app = create_app(settings)
        service = service_state(app)
        service.sweeper.start()  # re-enqueues unfinished collations found in the store, then sweeps
        warn_public_url(settings)
        server = make_server(app, settings)
        record = record_address(settings, server.effective_port)
        root = f"http://{settings.host}:{server.effective_port}"
        url = f"{root}/api/v1"
        print(f"Collation service on {root}/ : open it in a browser and paste manifest URLs", flush=True)
        print(f"API: {url}  (POST {url}/collations; Ctrl-C stops)", flush=True)
        signal.signal(signal.SIGTERM, _raise_interrupt)
        # Ctrl-C stops serve even when it was started with SIGINT ignored (a shell's background job)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            server.run()
        except KeyboardInterrupt:
            pass
        finally:
            _warm_shutdown(workers, asked)  # first: they finish their jobs while the API closes
            forget_address(record)
            server.close()
            service.close()  # stops the sweeper (after its current sweep), closes Redis
    finally:
        _warm_shutdown(workers, asked)
        for process in workers:
            local.stop(process, timeout=30)
        local.stop(redis_process)
    return 0


def address_record(settings: Settings, hostname: str | None = None) -> Path:
    """The file where ``collate serve`` records the address it listens on, for ``collate health``: a
    hidden file of the data folder, one per host (containers may share the folder), as PostgreSQL
    records its port in its data folder's ``postmaster.pid``."""
    return settings.data_dir / f".serve-{hostname or socket.gethostname()}.json"


def record_address(settings: Settings, port: int | str) -> Path | None:
    """Records the host and port this process serves on (``--port``, ``COLLATION_PORT``, or the free
    port that 0 picked); None, with a warning, when the data folder cannot be written."""
    from collation.core.atomic import write_json

    path = address_record(settings)
    try:
        write_json(path, {"pid": os.getpid(), "host": settings.host, "port": int(port)})  # waitress: a str
    except OSError as exc:
        log.warning("Could not record the port in %s (collate health will check COLLATION_PORT): %s", path, exc)
        return None
    return path


def forget_address(path: Path | None) -> None:
    """Removes this process's address record when it is still this process's (a later serve of the same
    host and data folder may have replaced it)."""
    if path is not None and (recorded_address(path) or {}).get("pid") == os.getpid():
        with contextlib.suppress(OSError):
            path.unlink()


def recorded_address(path: Path) -> dict[str, Any] | None:
    """The record of ``record_address`` (``pid``, ``host``, ``port``), None when there is none or it
    cannot be read."""
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) and isinstance(found.get("port"), int) else None


def worker_env(env: dict[str, str], i: int) -> dict[str, str]:
    """The environment of serve's ``i``-th worker: ``env``, with a metrics port of its own (the next
    ``i`` after ``COLLATION_WORKER_METRICS_PORT``) when the workers serve metrics."""
    port = int(env.get(f"{ENV_PREFIX}WORKER_METRICS_PORT", "0"))
    return {**env, f"{ENV_PREFIX}WORKER_METRICS_PORT": str(port + i)} if port else env


def _warm_shutdown(workers: list[subprocess.Popen], asked: set[int]) -> None:
    """Asks each running worker to stop once its current job is done (RQ's warm shutdown, SIGINT), once:
    a second SIGINT would be RQ's cold shutdown. ``asked`` holds the pids already asked."""
    for process in workers:
        if process.poll() is None and process.pid not in asked:
            process.send_signal(signal.SIGINT)
            asked.add(process.pid)


def warn_public_url(settings: Settings) -> bool:
    """Warns (and returns True) when ``serve`` binds a non-loopback address without
    ``COLLATION_PUBLIC_URL``: each request's Host header would then go into status URLs, annotation
    ids and callback payloads, so a client could make the service publish links to any host."""
    if settings.public_url or settings.host == "localhost" or _loopback(settings.host):
        return False
    log.warning(
        "Binding %s without COLLATION_PUBLIC_URL: links in responses, annotations and callbacks will name "
        "whatever host each request says; set COLLATION_PUBLIC_URL on a public deployment",
        settings.host,
    )
    return True


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _logging(settings: Settings) -> None:
    from collation.core.logs import configure_logging

    configure_logging(settings)
