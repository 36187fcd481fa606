"""The data store in an S3-compatible object store (``COLLATION_STORE_URL=s3://bucket/prefix``): for
an API and workers on machines that share no disk (cloud pods, GPU workers rented by the hour).

Through boto3 (a kept client library: signing, retries, multipart uploads). How each guarantee of
``DataStore`` holds without a file system:

- **Atomic objects.** An S3 PUT is atomic: readers get the old object or the new one. Large objects
  (features) are streamed to a local file first, then uploaded (multipart when large).
- **Creation.** Under the collation's lease (below): the creator clears what a deletion cut short
  left, then writes the record with a conditional PUT (``If-None-Match: *``). Of concurrent
  identical requests exactly one creates the record; the others find it.
- **The collation lock** is a lease: an object ``collations/<id>/.lock`` created with a conditional
  PUT, naming its holder and an expiry ``LEASE_SECONDS`` ahead (a holder killed with SIGKILL blocks
  the others that long at most); an expired lease is taken over with a PUT conditional on its ETag
  (``If-Match``), so two waiters never both take it. Lease times are wall-clock times of the
  machines: keep their clocks in sync (NTP), as for any lease.
- **Deletion**, under the lease too, so that no creation runs between its steps: the record goes
  first (from then on the collation does not exist for any reader or writer), then the rest of its
  objects. A writer checks that the record exists before it writes into a collation, so a deleted
  collation is not brought back.
- **Local cache.** Immutable objects read from a local file (features, region images, candidate
  pairs) go through a ``FileCache`` in ``COLLATION_DATA_DIR``, bounded by
  ``COLLATION_STORE_CACHE_BYTES``.

Every failure to reach the store (connection refused, timeouts, 5xx after boto3's retries, a
missing bucket, refused credentials) is raised as a ``StoreUnavailable``, an ``OSError`` with errno
``EIO`` whose message names the store: jobs fail and are retried, the sweeper backs off and the
status says why (``collation.store.writable``), as for a full disk. Refused credentials and a
missing bucket are also ``refused``: a configuration error that no retry mends.

**A store that stops answering** (a frozen process: connections open, nothing comes back) costs one
wait: every request has short connect and read timeouts (``COLLATION_STORE_CONNECT_TIMEOUT``,
``COLLATION_STORE_READ_TIMEOUT``), and once an attempt timed out the store is *silent*: for the
next ``read_timeout`` seconds every request of this process, boto3's retries included, fails at
once with a ``StoreUnavailable`` instead of waiting again. The API's request threads are then free
within one timeout, and its status GETs answer 503 naming the store (issue 31: before, each took
as long as the store was frozen, and ``/healthz`` waited behind them).

Longer than 400 lines because each guarantee of ``DataStore`` (atomic objects, creation once, the
lease, deletion) is built here from S3 requests, next to the one place that says what their
failures mean.
"""

from __future__ import annotations

import contextlib
import errno
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from collation.core.atomic import atomic_writer
from collation.store.codecs import json_bytes
from collation.store.datastore import CollationNotFound, DataStore
from collation.store.filecache import FileCache
from collation.store.metering import measure
from collation.store.records import CollationRecord

if TYPE_CHECKING:
    from collation.core.metrics import Metrics

LEASE_SECONDS = 30.0
"""How long a collation lock is held at most (longer than any read-modify-write of a record)."""
LOCK_WAIT_SECONDS = 60.0
"""How long ``locked`` waits for a lock before it gives up with ``StoreUnavailable``."""
OPERATIONS = {
    "reading": "read",
    "writing": "write",
    "looking": "has",
    "deleting": "delete",
    "listing": "list",
    "checking": "bucket",
}
"""The ``operation`` label of the S3 requests ``_calls`` counts, from the first word of its ``what``."""


REFUSALS = frozenset(
    {"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken", "NoSuchBucket"}
)
"""S3 error codes that say the store's configuration is wrong (credentials, bucket), not its health."""


class StoreUnavailable(OSError):
    """The object store cannot be reached or refuses the request; the message names it.

    ``refused``: the store answered that these credentials (or this bucket) will never do.
    """

    def __init__(self, message: str, *, refused: bool = False) -> None:
        super().__init__(errno.EIO, message)
        self.refused = refused


def parse_store_url(url: str) -> tuple[str, str]:
    """``s3://bucket/some/prefix`` -> ``("bucket", "some/prefix/")`` (the prefix empty or ending in ``/``)."""
    rest = url.removeprefix("s3://")
    bucket, _, prefix = rest.partition("/")
    prefix = prefix.strip("/")
    return bucket, f"{prefix}/" if prefix else ""


def s3_client(endpoint: str | None, connect_timeout: float = 2.0, read_timeout: float = 5.0, retries: int = 1) -> Any:
    """A boto3 S3 client: path-style addressing (what SeaweedFS, MinIO and Ceph serve), the timeouts
    given, and boto3's standard retries (``retries`` further attempts with back-off) on throttling and 5xx."""
    import boto3
    from botocore.config import Config

    config = Config(
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        retries={"total_max_attempts": 1 + retries, "mode": "standard"},
        s3={"addressing_style": "path"},
        # checksums only where the operation needs them (SeaweedFS and older servers refuse the rest)
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
    )
    return boto3.session.Session().client("s3", endpoint_url=endpoint or None, config=config)


class ObjectStore(DataStore):
    """The data store in ``bucket`` under ``prefix``, with a local cache of immutable objects.

    Args:
        url: ``s3://bucket/prefix``.
        cache_dir: this process's local cache (``COLLATION_DATA_DIR``); also where large objects are
            staged before their upload.
        cache_bytes: the cache's bound.
        endpoint: the S3 API's URL (None: boto3's, from ``AWS_ENDPOINT_URL`` or AWS).
        client: a boto3 S3 client (tests); built from ``endpoint`` by default.
        connect_timeout, read_timeout, retries: of the client built (``s3_client``); ``read_timeout``
            is also how long the store stays silent after a request timed out.
        metrics: the process's, when it counts: every group of S3 requests (``_calls``) is counted
            (``collation.store.metering``).
    """

    backend = "s3"

    def __init__(
        self,
        url: str,
        cache_dir: str | Path,
        cache_bytes: int,
        endpoint: str | None = None,
        client: Any = None,
        metrics: Metrics | None = None,
        *,
        connect_timeout: float = 2.0,
        read_timeout: float = 5.0,
        retries: int = 1,
    ) -> None:
        self.bucket, self.prefix = parse_store_url(url)
        self.client = client if client is not None else s3_client(endpoint, connect_timeout, read_timeout, retries)
        where = endpoint or getattr(self.client.meta, "endpoint_url", "")
        self.description = f"object store {url} at {where}" if where else f"object store {url}"
        self.read_timeout = read_timeout
        self._silent_until = 0.0
        """``time.monotonic()`` until which the store is not asked (it did not answer in time)."""
        self.client.meta.events.register("before-send.s3", self._unless_silent)
        self.client.meta.events.register("needs-retry.s3", self._note_attempt)
        self.cache = FileCache(Path(cache_dir) / "objects", cache_bytes)
        self.staging = Path(cache_dir) / "staging"
        self.downloaded = 0
        """Bytes this process downloaded from the store (objects read, local copies filled)."""
        self._count_lock = threading.Lock()
        self._bucket_checked = False
        self.metrics = metrics

    # ----------------------------------------------------------------------------------------------
    # Calls, and what their failures mean

    @contextlib.contextmanager
    def _calls(self, what: str) -> Iterator[None]:
        """Turns boto3's failures into ``StoreUnavailable`` naming the store and the operation; counts the
        block as one operation (``OPERATIONS``) when the store has metrics."""
        from boto3.exceptions import S3UploadFailedError
        from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

        self._unless_silent()
        try:
            with measure(self.metrics, self.backend, OPERATIONS.get(what.split(" ", 1)[0], "other")):
                yield
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code == "NoSuchBucket":
                message = f"{self.description}: the bucket {self.bucket!r} does not exist"
                raise StoreUnavailable(message, refused=True) from None
            refused = code in REFUSALS or status in (401, 403)
            raise StoreUnavailable(
                f"{self.description}: {what} failed: {code or status} {exc}", refused=refused
            ) from None
        except S3UploadFailedError as exc:  # boto3's wrapping of an upload's ClientError
            raise StoreUnavailable(f"{self.description}: {what} failed: {exc}", refused="403" in str(exc)) from None
        except BotoCoreError as exc:  # connection refused or reset, timeouts, no credentials
            self._note_attempt(exc)
            refused = isinstance(exc, NoCredentialsError)
            raise StoreUnavailable(f"{self.description} cannot be reached ({what}): {exc}", refused=refused) from None

    def _unless_silent(self, **_: Any) -> None:
        """Fails at once while the store is silent (boto3 calls it before every attempt, ``_calls`` first)."""
        left = self._silent_until - time.monotonic()
        if left > 0:
            raise StoreUnavailable(
                f"{self.description} is not answering (no answer within {self.read_timeout:g} s; "
                f"not asked again for {left:.1f} s)"
            )

    def _note_attempt(self, caught_exception: BaseException | None = None, **_: Any) -> None:
        """An attempt that timed out makes the store silent for ``read_timeout`` seconds (boto3 calls
        it after every attempt, before it decides on a retry, so the retry fails at once too)."""
        from botocore.exceptions import ConnectTimeoutError, ReadTimeoutError

        if isinstance(caught_exception, ConnectTimeoutError | ReadTimeoutError):
            self._silent_until = time.monotonic() + self.read_timeout

    @staticmethod
    def _status(exc: Exception) -> int | None:
        response = getattr(exc, "response", None) or {}
        return response.get("ResponseMetadata", {}).get("HTTPStatusCode")

    def _count(self, n: int) -> None:
        with self._count_lock:
            self.downloaded += n

    def ensure_bucket(self) -> None:
        """Creates the bucket when it does not exist (a fresh test or development server)."""
        from botocore.exceptions import ClientError

        if self._bucket_checked:
            return
        with self._calls("checking the bucket"):
            try:
                self.client.head_bucket(Bucket=self.bucket)
            except ClientError as exc:
                if self._status(exc) != 404:
                    raise
                with contextlib.suppress(self.client.exceptions.BucketAlreadyOwnedByYou):
                    self.client.create_bucket(Bucket=self.bucket)
        self._bucket_checked = True

    # ----------------------------------------------------------------------------------------------
    # Primitives

    def read(self, key: str) -> bytes | None:
        from botocore.exceptions import ClientError

        with self._calls(f"reading {key}"):
            try:
                data = self.client.get_object(Bucket=self.bucket, Key=self.prefix + key)["Body"].read()
            except ClientError as exc:
                if self._status(exc) == 404 and exc.response["Error"].get("Code") != "NoSuchBucket":
                    return None
                raise
        self._count(len(data))
        return data

    def _read_with_etag(self, key: str) -> tuple[bytes, str] | None:
        from botocore.exceptions import ClientError

        with self._calls(f"reading {key}"):
            try:
                response = self.client.get_object(Bucket=self.bucket, Key=self.prefix + key)
            except ClientError as exc:
                if self._status(exc) == 404 and exc.response["Error"].get("Code") != "NoSuchBucket":
                    return None
                raise
            return response["Body"].read(), response["ETag"]

    def write(self, key: str, data: bytes) -> None:
        with self._calls(f"writing {key}"):
            self.client.put_object(Bucket=self.bucket, Key=self.prefix + key, Body=data)

    def _put_if(self, key: str, data: bytes, **condition: str) -> bool:
        """A conditional PUT (``IfNoneMatch="*"`` or ``IfMatch=etag``); False on 412."""
        from botocore.exceptions import ClientError

        with self._calls(f"writing {key}"):
            try:
                self.client.put_object(Bucket=self.bucket, Key=self.prefix + key, Body=data, **condition)
            except ClientError as exc:
                if self._status(exc) in (409, 412):  # 409: a concurrent conditional write of the same key
                    return False
                raise
        return True

    def create_once(self, key: str, data: bytes) -> bool:
        return self._put_if(key, data, IfNoneMatch="*")

    @contextlib.contextmanager
    def writer(self, key: str) -> Iterator[IO[bytes]]:
        """Streams to a local staging file, uploads it when the block ends, then keeps it as the
        local copy (the worker that wrote features usually reads them next)."""
        staged = self.staging / f"{uuid.uuid4().hex}.part"
        with atomic_writer(staged) as f:
            yield f
        try:
            from boto3.s3.transfer import TransferConfig

            # one PUT up to 64 MB (the features of a few hundred illustrations), parts of 64 MB above
            transfer = TransferConfig(multipart_threshold=64 * 2**20, multipart_chunksize=64 * 2**20)
            with self._calls(f"writing {key}"):
                self.client.upload_file(str(staged), self.bucket, self.prefix + key, Config=transfer)
            self.cache.adopt(key, staged)
        finally:
            with contextlib.suppress(FileNotFoundError):
                staged.unlink()

    def has(self, key: str) -> bool:
        from botocore.exceptions import ClientError

        with self._calls(f"looking for {key}"):
            try:
                self.client.head_object(Bucket=self.bucket, Key=self.prefix + key)
            except ClientError as exc:
                if self._status(exc) == 404:
                    return False
                raise
        return True

    def delete(self, key: str) -> None:
        with self._calls(f"deleting {key}"):
            self.client.delete_object(Bucket=self.bucket, Key=self.prefix + key)

    def _list(self, prefix: str) -> Iterator[dict]:
        with self._calls(f"listing {prefix}"):
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=self.prefix + prefix
            )
            for page in pages:
                yield from page.get("Contents", [])

    def delete_prefix(self, prefix: str) -> None:
        self._delete_keys(prefix, [item["Key"] for item in self._list(prefix)])

    def _delete_keys(self, prefix: str, keys: list[str]) -> None:
        for start in range(0, len(keys), 1000):  # the most one request deletes
            batch = [{"Key": key} for key in keys[start : start + 1000]]
            with self._calls(f"deleting {prefix}"):
                self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": batch, "Quiet": True})

    def versions(self, prefix: str) -> dict[str, str]:
        out = {}
        for item in self._list(prefix):
            key = item["Key"].removeprefix(self.prefix)
            if not key.rsplit("/", 1)[-1].startswith("."):  # the lock, probes
                out[key] = item["ETag"]
        return out

    def local_file(self, key: str) -> Path | None:
        from botocore.exceptions import ClientError

        path = self.cache.get(key)
        if path is not None:
            return path

        def download(f: IO[bytes]) -> None:
            self.client.download_fileobj(self.bucket, self.prefix + key, f)
            self._count(f.tell())

        with self._calls(f"reading {key}"):
            try:
                return self.cache.fill(key, download)
            except ClientError as exc:
                if self._status(exc) == 404:
                    return None
                raise

    def identity(self) -> str:
        self.ensure_bucket()
        return super().identity()

    # ----------------------------------------------------------------------------------------------
    # Collations

    def create_collation(self, record: CollationRecord) -> bool:
        """Under the lease, so that of concurrent identical requests the one that clears what a
        deletion cut short left (objects without a record: nobody's) never clears another's new
        record: they come one after the other, and the later ones find the record."""
        prefix = self.collation_prefix(record.id)
        if self.has(prefix + "record.json"):
            return False
        with self._lease(record.id):
            if self.has(prefix + "record.json"):
                return False
            self._clear(prefix)
            return self.create_once(prefix + "record.json", json_bytes(record.to_json()))

    @contextlib.contextmanager
    def locked(self, cid: str) -> Iterator[None]:
        prefix = self.collation_prefix(cid)
        if not self.has(prefix + "record.json"):
            raise CollationNotFound(f"no collation {cid!r}", field="id")
        with self._lease(cid):
            if not self.has(prefix + "record.json"):
                raise CollationNotFound(f"no collation {cid!r}", field="id")
            yield

    def update_record(self, cid: str, change: Callable[[CollationRecord], Any]) -> CollationRecord:
        """Under the lease: read the record (absent: ``CollationNotFound``), change it, write it. Five
        requests (lease, read, write, lease check, release), where the generic one makes eight;
        deletion takes the lease too, so the write never brings back a deleted collation."""
        with self._lease(cid):
            record = self.load_record(cid)
            change(record)
            self.write(self.collation_prefix(cid) + "record.json", json_bytes(record.to_json()))
            return record

    @contextlib.contextmanager
    def _lease(self, cid: str) -> Iterator[None]:
        key, owner = self.collation_prefix(cid) + ".lock", uuid.uuid4().hex
        self._acquire(key, owner)
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                found = self._read_with_etag(key)
                if found is not None and json.loads(found[0]).get("owner") == owner:
                    self.delete(key)

    def _acquire(self, key: str, owner: str) -> None:
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        delay = 0.01
        while True:
            lease = json.dumps({"owner": owner, "expires": time.time() + LEASE_SECONDS}).encode()
            if self.create_once(key, lease):
                return
            found = self._read_with_etag(key)
            if found is None:
                continue  # released meanwhile: try again at once
            held, etag = found
            with contextlib.suppress(ValueError, AttributeError):
                if json.loads(held)["expires"] < time.time() and self._put_if(key, lease, IfMatch=etag):
                    return  # an expired lease (its holder died), taken over by exactly one waiter
            if time.monotonic() > deadline:
                raise StoreUnavailable(f"{self.description}: the lock {key} was not released in {LOCK_WAIT_SECONDS} s")
            time.sleep(delay)
            delay = min(delay * 2, 0.2)

    def write_in_collation(self, cid: str, relative: str, data: bytes) -> None:
        prefix = self.collation_prefix(cid)
        if not self.has(prefix + "record.json"):
            raise CollationNotFound(f"no collation {cid!r} (deleted meanwhile)", field="id")
        self.write(prefix + relative, data)

    def delete_collation(self, cid: str) -> bool:
        prefix = self.collation_prefix(cid)
        if not self.has(prefix + "record.json"):
            return False
        with self._lease(cid):  # no read-modify-write of the record is half done, no creation begins
            self.delete(prefix + "record.json")  # from now on the collation does not exist
            self._clear(prefix)
        return True

    def _clear(self, prefix: str) -> None:
        """Deletes a collation's objects but its lease, which the holder releases itself."""
        keys = [item["Key"] for item in self._list(prefix) if item["Key"] != self.prefix + prefix + ".lock"]
        self._delete_keys(prefix, keys)
