"""``collate serve`` and ``collate worker``: the service's two commands.

The owner's argparse command line calls ``add_subcommands(subparsers)``; ``python -m
collation.service serve|worker`` runs the same functions on its own.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from .config import load_settings, settings_environ

log = logging.getLogger("collation.service")


def add_subcommands(subparsers: Any) -> None:
    """Adds ``serve`` and ``worker`` to an argparse subparsers object (each sets ``func`` and ``handler``)."""
    serve = subparsers.add_parser(
        "serve", help="run the collation API (and, without COLLATION_REDIS_URL, a private Redis and a worker)",
        description="Runs the REST API. Without COLLATION_REDIS_URL it also starts a private redis-server "
                    "under COLLATION_DATA_DIR and worker processes, so it works on one machine with nothing "
                    "else running.")
    serve.add_argument("--host", help="address to bind (default COLLATION_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default COLLATION_PORT or 8000; 0 picks a free one)")
    serve.add_argument("--workers", type=int, default=None,
                       help="worker processes to start (default: 1 with a private Redis, else 0)")
    serve.set_defaults(func=run_serve, handler=run_serve)

    worker = subparsers.add_parser(
        "worker", help="run an RQ worker on the collation queues",
        description="Runs a non-forking RQ worker that keeps its backbone loaded between jobs.")
    worker.add_argument("--burst", action="store_true", help="quit when the queues are empty")
    worker.add_argument("--queues", default="io,compute",
                        help="io, compute or both (default io,compute); GPU machines take compute only")
    worker.add_argument("--name", help="worker name (default: random)")
    worker.set_defaults(func=run_worker, handler=run_worker)


add_service_commands = add_subcommands
"""The name ``collation.cli`` imports."""


def run_worker(args: argparse.Namespace) -> int:
    """``collate worker [--burst] [--queues io,compute]``."""
    from ..jobs.worker import work
    from ..settings import Settings

    _logging()
    settings = Settings.from_env()
    if not settings.redis_url:
        log.error("COLLATION_REDIS_URL is not set: a worker needs the service's Redis")
        return 2
    queues = [q.strip() for q in (getattr(args, "queues", None) or "io,compute").split(",") if q.strip()]
    work(settings, queues, burst=bool(getattr(args, "burst", False)), name=getattr(args, "name", None))
    return 0


def run_serve(args: argparse.Namespace) -> int:
    """``collate serve [--host H] [--port P]``: the API, plus a private Redis and workers when needed."""
    from waitress import create_server

    from . import local
    from .app import create_app, start_sweeper, stop_sweeper

    _logging()
    overrides = {k: v for k, v in (("HOST", getattr(args, "host", None)), ("PORT", getattr(args, "port", None)))
                 if v is not None}
    settings = load_settings(overrides)
    redis_process = None
    workers: list[subprocess.Popen] = []
    n_workers = getattr(args, "workers", None)
    try:
        if not settings["REDIS_URL"]:
            redis_process, settings["REDIS_URL"] = local.start_redis(Path(settings["DATA_DIR"]) / "redis")
            log.info("Started a private redis-server at %s", settings["REDIS_URL"])
            n_workers = 1 if n_workers is None else n_workers
        env = {**os.environ, **settings_environ(settings)}
        for _ in range(n_workers or 0):
            workers.append(subprocess.Popen([sys.executable, "-m", "collation.service", "worker"], env=env))
        app = create_app(settings)
        start_sweeper(app)  # re-enqueues unfinished collations found in the store, then sweeps
        server = create_server(app, host=settings["HOST"], port=int(settings["PORT"]), threads=8)
        url = f"http://{settings['HOST']}:{server.effective_port}/api/v1"
        print(f"Collation service on {url}  (POST {url}/collations; Ctrl-C stops)", flush=True)
        signal.signal(signal.SIGTERM, _raise_interrupt)
        try:
            server.run()
        except KeyboardInterrupt:
            pass
        finally:
            server.close()
            stop_sweeper(app)
    finally:
        for process in workers:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)  # warm shutdown: the current job finishes
        for process in workers:
            local.stop(process, timeout=30)
        local.stop(redis_process)
    return 0


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _logging() -> None:
    logging.basicConfig(level=os.environ.get("COLLATION_LOG_LEVEL", "INFO"),
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")


def main(argv: list[str] | None = None) -> int:
    """``python -m collation.service serve|worker``."""
    parser = argparse.ArgumentParser(prog="python -m collation.service")
    add_subcommands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)
