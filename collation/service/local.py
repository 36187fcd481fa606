"""A private ``redis-server`` for one machine with nothing running (``collate serve`` without a Redis URL).

No persistence: the data store is the system of record, and unfinished collations are re-enqueued
from it when the service starts.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

from redis import Redis
from redis.exceptions import RedisError

from ..errors import CollationError


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def start_redis(folder: Path, port: int | None = None, timeout: float = 10.0) -> tuple[subprocess.Popen, str]:
    """Starts ``redis-server`` on 127.0.0.1 with its files under ``folder``; returns (process, URL).

    Raises:
        CollationError: redis-server is not installed or does not answer within ``timeout``.
    """
    binary = shutil.which("redis-server")
    if binary is None:
        raise CollationError(
            "redis-server is not installed: install it (apt-get install redis-server) "
            "or set COLLATION_REDIS_URL to a running Redis"
        )
    folder.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    process = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(folder),
            "--save",
            "",
            "--appendonly",
            "no",
            "--logfile",
            str(folder / "redis.log"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    client = Redis.from_url(url, socket_connect_timeout=1)
    deadline = time.monotonic() + timeout
    while True:
        try:
            client.ping()
            client.close()
            return process, url
        except RedisError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                process.wait()
                raise CollationError(f"redis-server did not start; see {folder / 'redis.log'}") from None
            time.sleep(0.05)


def stop(process: subprocess.Popen | None, timeout: float = 10.0) -> None:
    """Terminates a child process, killing it if it does not exit within ``timeout``."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
