"""The suite's SeaweedFS is ready when ``start_seaweedfs`` returns (issue 41): it has taken a write, not
merely answered ``ListBuckets``. Before, its volume server joined the master seconds later, and a test's
first write (a POST's record) could wait past the store's 5 s read timeout: a 503, a test failed at random.
And a port drawn free but taken before weed bound it no longer fails the run (as ``start_redis``)."""

from __future__ import annotations

import json
import socket
import urllib.request
from pathlib import Path

import boto3
import pytest
from botocore.config import Config
from service_helpers import SEAWEEDFS_ELECTION_TIMEOUT, stop_seaweedfs

from collation.cli import private_servers
from collation.cli.private_servers import SEAWEEDFS_KEYS, start_seaweedfs


@pytest.mark.stack
def test_seaweedfs_takes_a_write_at_once_when_it_is_started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Started as the suite starts it, except that its first S3 port is taken by another process after it
    was drawn (weed exits at once): it starts on other ports instead of failing the session's fixtures."""
    draws: list[int] = []

    def draw() -> int:  # the fourth port drawn (S3's) is the one another process took meanwhile
        draws.append(taken if len(draws) == 3 else free_pair_port())
        return draws[-1]

    free_pair_port = private_servers._free_pair_port
    monkeypatch.setattr(private_servers, "_free_pair_port", draw)
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))  # bound is enough to make weed's bind fail
        taken = other.getsockname()[1]
        process, endpoint, ports = start_seaweedfs(tmp_path / "weed", election_timeout=SEAWEEDFS_ELECTION_TIMEOUT)
    assert len(draws) == 8 and taken not in ports and ports == tuple(draws[4:])
    assert "bind: address already in use" in (tmp_path / "weed" / "weed.log").read_text().lower()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ports[0]}/vol/status", timeout=5) as answer:
            topology = json.load(answer)["Volumes"]
        assert topology["Max"] > 0, topology  # a volume server has joined the master
        nodes = [node for dc in topology["DataCenters"].values() for rack in dc.values() for node in rack.values()]
        assert any(nodes), topology  # and a write made it grow volumes: a write was taken before it returned
        client = boto3.session.Session().client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id=SEAWEEDFS_KEYS[0],
            aws_secret_access_key=SEAWEEDFS_KEYS[1],
            region_name="us-east-1",
            config=Config(connect_timeout=5, read_timeout=5, retries={"max_attempts": 1}),  # the store's own
        )
        client.create_bucket(Bucket="first-test")
        client.put_object(Bucket="first-test", Key="record.json", Body=b"{}")  # within 5 s, first try
        assert client.get_object(Bucket="first-test", Key="record.json")["Body"].read() == b"{}"
    finally:
        stop_seaweedfs(process)
