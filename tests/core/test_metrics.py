"""What each part of a process counts in its ``Metrics`` (``collation.core.metrics``): fetches by host and
outcome (``net.http``, against loopback servers), data store operations and their errors
(``store.metering``, on a folder and on SeaweedFS), the worker's feature cache (``jobs.runtime``), how
a job's id and end read as labels (``jobs.worker``), and the metrics ports of ``collate serve``'s
workers. The scrape of a real running service is in tests/service/test_monitoring.py."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
import torch
from builders import static_server
from rq.job import JobStatus

from collation.cli.serve import worker_env
from collation.core.errors import FetchError, LimitError, UnsafeURLError
from collation.core.metrics import JobOutcome, Metrics
from collation.core.settings import Settings
from collation.engine.features import MultiScaleFeatures
from collation.jobs.runtime import Runtime
from collation.jobs.worker import job_outcome, job_step
from collation.net.http import Fetcher, fetch_outcome
from collation.store.datastore import CollationNotFound
from collation.store.folder import FolderStore
from collation.store.objects import ObjectStore, StoreUnavailable


def value(metrics: Metrics, name: str, **labels: str) -> float:
    """The sample ``name{labels}`` of ``metrics`` (0 when it was never counted)."""
    return metrics.registry.get_sample_value(name, labels) or 0.0


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_fetches_are_counted_by_host_and_outcome(tmp_path: Path) -> None:
    (tmp_path / "doc.json").write_text('{"a": 1}')
    (tmp_path / "big.json").write_text('{"a": "' + "x" * 5000 + '"}')
    metrics = Metrics(hosts=["127.0.0.1"])  # COLLATION_METRICS_HOSTS: the hosts an operator names
    fetcher = Fetcher(allowed_hosts=["127.0.0.1"], retries=0, metrics=metrics)
    with static_server(tmp_path) as site:
        site.routes["/busy"] = lambda handler: (503, {"Content-Type": "text/plain"}, b"busy")
        assert fetcher.get(f"{site.url}/doc.json").status == 200
        assert fetcher.get(f"{site.url}/doc.json").status == 200  # no disk cache: fetched and counted again
        for url, error in [
            (f"{site.url}/missing.json", FetchError),
            (f"{site.url}/busy", FetchError),
            (f"{site.url}/big.json", LimitError),
            (f"http://127.0.0.1:{closed_port()}/x.json", FetchError),
            ("http://10.1.2.3/manifest.json", UnsafeURLError),
        ]:
            with pytest.raises(error):
                fetcher.get(url, max_bytes=1000)
    host = {"host": "127.0.0.1"}
    assert value(metrics, "collation_fetches_total", **host, outcome="ok") == 2
    assert value(metrics, "collation_fetches_total", **host, outcome="http_404") == 1
    assert value(metrics, "collation_fetches_total", **host, outcome="http_503") == 1
    assert value(metrics, "collation_fetches_total", **host, outcome="too_large") == 1
    assert value(metrics, "collation_fetches_total", **host, outcome="unreachable") == 1
    assert value(metrics, "collation_fetches_total", host="10.1.2.3", outcome="refused") == 0  # not fetched
    assert value(metrics, "collation_fetches_total", host="other", outcome="refused") == 0
    assert value(metrics, "collation_fetch_duration_seconds_count", **host) == 6
    assert fetcher.with_limits(total_timeout=5).metrics is metrics  # inspect and callbacks count too


def test_a_fetch_that_ran_out_of_time_is_a_timeout() -> None:
    assert fetch_outcome(FetchError("manifest http://x/m: took longer than 120.0 s", url="http://x/m")) == "timeout"
    assert fetch_outcome(FetchError("manifest http://x/m: HTTP 429", url="http://x/m", status=429)) == "http_429"
    assert fetch_outcome(ValueError("anything else")) == "error"


def test_a_fetcher_without_metrics_counts_nothing(tmp_path: Path) -> None:
    (tmp_path / "doc.json").write_text("{}")
    with static_server(tmp_path) as site:
        fetcher = Fetcher(allowed_hosts=["127.0.0.1"])
        fetcher.get(f"{site.url}/doc.json")
    assert fetcher.metrics is None and fetcher.requests_sent == 1


def test_store_operations_and_errors_are_counted(tmp_path: Path) -> None:
    metrics = Metrics()
    store = FolderStore(tmp_path, metrics=metrics)
    store.write("a/one.json", b"{}")
    assert store.read("a/one.json") == b"{}"
    assert store.read("a/none.json") is None  # absent: an answer, not an error
    with store.writer("a/big.bin") as f:
        f.write(b"x" * 10)
    with pytest.raises(CollationNotFound):
        store.write_in_collation("nosuchcollation", "results/0-1.npz", b"")
    with pytest.raises(OSError):
        store.write("a/one.json/child", b"{}")  # a file where a folder should be: the disk refuses
    folder = {"backend": "folder"}
    assert value(metrics, "collation_store_operations_total", **folder, operation="write", outcome="ok") == 1
    assert value(metrics, "collation_store_operations_total", **folder, operation="write", outcome="error") == 1
    assert value(metrics, "collation_store_operations_total", **folder, operation="read", outcome="ok") == 2
    assert value(metrics, "collation_store_operations_total", **folder, operation="writer", outcome="ok") == 1
    labels = {**folder, "operation": "write_in_collation", "outcome": "missing"}
    assert value(metrics, "collation_store_operations_total", **labels) == 1
    assert value(metrics, "collation_store_operation_duration_seconds_count", **folder, operation="read") == 2
    assert (tmp_path / "a" / "big.bin").read_bytes() == b"x" * 10


def test_the_feature_cache_counts_its_hits_and_misses(tmp_path: Path) -> None:
    metrics = Metrics()
    runtime = Runtime.create(Settings.from_env({}, data_dir=tmp_path, device="cpu"), metrics=metrics)
    desc = torch.nn.functional.normalize(torch.rand(2, 1, 4, 112), dim=-1)
    feats = MultiScaleFeatures(
        desc, torch.full((2, 1, 4, 2), 0.5), torch.ones(2, 1, 4, dtype=torch.bool), (2,), 2, "efficientnet-lite0"
    )
    runtime.store.save_features("k0", feats)
    runtime.features("k0")  # read from the store
    runtime.features("k0")  # from memory
    runtime.features("k0")
    assert value(metrics, "collation_feature_cache_lookups_total", result="miss") == 1
    assert value(metrics, "collation_feature_cache_lookups_total", result="hit") == 2
    assert value(metrics, "collation_store_operations_total", backend="folder", operation="writer", outcome="ok") == 1


def test_a_job_id_reads_back_as_its_collation_and_step() -> None:
    assert job_step("ab12cd-chunk-0-1-7") == ("ab12cd", "chunk-0-1-7")
    assert job_step("ab12cd-callback") == ("ab12cd", "callback")
    assert job_step("something") == (None, "something")
    assert job_outcome(True, JobStatus.FINISHED) is JobOutcome.OK
    assert job_outcome(False, JobStatus.SCHEDULED) is JobOutcome.RETRIED
    assert job_outcome(False, JobStatus.FAILED) is JobOutcome.FAILED


def test_object_store_requests_are_counted_and_an_unreachable_store_is_an_error(
    s3_server: Any, s3_url: str, tmp_path: Path
) -> None:
    metrics = Metrics()
    store = ObjectStore(s3_url, tmp_path / "cache", 2**20, endpoint=s3_server.endpoint, metrics=metrics)
    store.write("a/one.json", b"{}")
    assert store.read("a/one.json") == b"{}"
    assert store.read("a/none.json") is None and not store.has("a/none.json")
    assert sorted(store.versions("a/")) == ["a/one.json"]
    down = ObjectStore(
        s3_url, tmp_path / "cache2", 2**20, endpoint=f"http://127.0.0.1:{closed_port()}", metrics=metrics
    )
    with pytest.raises(StoreUnavailable):
        down.read("a/one.json")
    s3 = {"backend": "s3"}
    assert value(metrics, "collation_store_operations_total", **s3, operation="write", outcome="ok") == 1
    assert value(metrics, "collation_store_operations_total", **s3, operation="read", outcome="ok") == 2
    assert value(metrics, "collation_store_operations_total", **s3, operation="has", outcome="ok") == 1
    assert value(metrics, "collation_store_operations_total", **s3, operation="list", outcome="ok") == 1
    assert value(metrics, "collation_store_operations_total", **s3, operation="read", outcome="error") == 1


def test_serve_gives_each_of_its_workers_a_metrics_port_of_its_own() -> None:
    env = {"COLLATION_WORKER_METRICS_PORT": "9101", "PATH": "/bin"}
    assert [worker_env(env, i)["COLLATION_WORKER_METRICS_PORT"] for i in range(3)] == ["9101", "9102", "9103"]
    assert worker_env({"PATH": "/bin"}, 1) == {"PATH": "/bin"}  # no port: the workers serve no metrics
