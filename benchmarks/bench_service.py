"""Service against command line: one 15 x 15 collation both ways, on the same images.

The images come from the scale benchmark's generator (``benchmarks/copies.py``: copies of real
Physiologus illustrations and page crops among distractors, at a chosen ``--difficulty``), written to
a folder. Peak RSS is read from each process's own resource usage when it ends (``os.wait4``): the
``collate match`` process, and the worker (a ``SimpleWorker``: it runs every job in its own process).

- **Command line**: ``collate match A=<folder> B=<folder>`` as a fresh process (``python -m
  collation.cli.main``: imports, backbone load and per-shape kernel compilation included, as a user sees
  it); for reference also its path in this process, warm after the first round (the folders read
  with ``folder_illustrations``, then ``run_collation``).
- **Service**: a private ``redis-server`` (``collation.cli.private_servers.start_redis``), one
  ``collate worker`` subprocess started and idle before the clock starts (as in a running service),
  the Flask app in this process, and two IIIF v3 manifests (one canvas per image, whole canvases as
  regions) served from a loopback static server. Timed from the POST to ``finished``; the job log
  gives the time of each step. Each service round has its own Redis, worker and data store (no
  cached features or scores).

The two are interleaved for ``--rounds`` rounds (on a shared machine one run of each moves by 5x
with the neighbours' load); the medians and their ratio come last.

    .venv/bin/python benchmarks/bench_service.py [--size 15x15] [--candidates 10|all] [--rounds 3]
    .venv/bin/python benchmarks/bench_service.py --size 816x405 --difficulty hard --rounds 1 --skip-in-process \
        --keep /tmp/svc  # then: collate evaluate /tmp/svc/match0 --ground-truth /tmp/svc/gt.json --pair A,B
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(HERE)]

from copies import DIFFICULTIES, make_pair  # noqa: E402

from collation.app import create_app  # noqa: E402
from collation.cli.private_servers import free_port, start_redis, stop  # noqa: E402
from collation.core import defaults  # noqa: E402
from collation.core.options import CollationOptions  # noqa: E402
from collation.core.settings import Settings  # noqa: E402
from collation.engine.illustrations import folder_illustrations  # noqa: E402
from collation.engine.pipeline import Manuscript, run_collation  # noqa: E402
from collation.service.state import service_state  # noqa: E402


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def manifest(url: str, name: str, base: str, sizes: list[tuple[int, int]]) -> dict:
    canvases = []
    for k, (w, h) in enumerate(sizes):
        cid = f"{base}/{name}/canvas/{k}"
        body = {"id": f"{base}/{name}/{k:03d}.png", "type": "Image", "format": "image/png", "width": w, "height": h}
        canvases.append(
            {
                "id": cid,
                "type": "Canvas",
                "label": {"none": [str(k)]},
                "width": w,
                "height": h,
                "items": [
                    {
                        "id": f"{cid}/page",
                        "type": "AnnotationPage",
                        "items": [
                            {
                                "id": f"{cid}/painting",
                                "type": "Annotation",
                                "motivation": "painting",
                                "body": body,
                                "target": cid,
                            }
                        ],
                    }
                ],
            }
        )
    return {
        "@context": "http://iiif.io/api/presentation/3/context.json",
        "id": url,
        "type": "Manifest",
        "label": {"en": [name]},
        "items": canvases,
    }


def python_path() -> str:
    """The repository first, then this process's own PYTHONPATH (on the GPU machine, the carried wheels)."""
    return os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)


def wait_peak_gb(process: subprocess.Popen) -> float:
    """Waits for ``process`` and returns its peak resident memory in GB (Linux: ru_maxrss in KiB)."""
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss * 1024 / 1e9


def command(folders: list[Path], out: Path, candidates: int | None) -> tuple[float, float]:
    """Seconds and peak RSS (GB) of ``collate match`` in a fresh process; its report of each stage's time
    goes to ``<out>.log``."""
    argv = [
        sys.executable,
        "-m",
        "collation.cli.main",
        "match",
        *(f"{f.name}={f}" for f in folders),
        "--out",
        str(out),
        "--device",
        "cpu",
        "--candidates",
        "all" if candidates is None else str(candidates),
    ]
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("COLLATION_")}, "PYTHONPATH": python_path()}
    start = time.perf_counter()
    with open(out.with_suffix(".log"), "wb") as log:
        process = subprocess.Popen(argv, env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        peak = wait_peak_gb(process)
    if process.returncode:
        raise SystemExit(f"collate match ended with {process.returncode}")
    return time.perf_counter() - start, peak


def in_process(folders: list[Path], candidates: int | None) -> float:
    start = time.perf_counter()
    manuscripts = [Manuscript(f.name, folder_illustrations(f)) for f in folders]
    run_collation(manuscripts, CollationOptions(candidates=candidates), device="cpu")
    return time.perf_counter() - start


def service(
    root: Path,
    work: Path,
    folders: list[Path],
    candidates: int | None,
    store_options: dict[str, str] | None = None,
    workers: int = 1,
    device: str = "cpu",
    io_workers: int = 0,
) -> tuple[float, float, float, str]:
    """(seconds from POST to finished, seconds the workers took to start, the first worker's peak RSS
    in GB, the workers' logs); the static server serves ``root`` (the image folders), Redis, the data
    store and the logs go under ``work``. With ``store_options`` (``store_url``, ``store_endpoint``)
    the data store is an object store and every worker has a directory of its own (``work/worker<n>``),
    as on machines that share no disk; ``workers`` workers, each with ``OMP_NUM_THREADS`` = 2 / workers.
    With ``io_workers``, the ``workers`` take the compute queue alone on ``device`` (``collate worker --device``)
    and ``io_workers`` more take the io queue on the CPU, one thread each: a GPU machine's layout."""
    work.mkdir(parents=True)
    site = ThreadingHTTPServer(("127.0.0.1", free_port()), functools.partial(Quiet, directory=str(root)))
    threading.Thread(target=site.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{site.server_address[1]}"
    urls = []
    for folder in folders:
        from PIL import Image

        sizes = [Image.open(p).size for p in sorted(folder.glob("*.png"))]
        url = f"{base}/{folder.name}/manifest.json"
        (folder / "manifest.json").write_text(json.dumps(manifest(url, folder.name, base, sizes)))
        urls.append(url)
    redis, redis_url = start_redis(work / "redis")
    settings = Settings.from_env(
        {},
        redis_url=redis_url,
        data_dir=work / "data",
        allowed_hosts=("127.0.0.1",),
        device="cpu",
        sweep_interval=0,
        log_level="INFO",
        **(store_options or {}),
    )
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("COLLATION_")},
        **settings.to_environ(),
        "PYTHONPATH": python_path(),
    }
    if workers > 1:
        env["OMP_NUM_THREADS"] = str(max(1, 2 // workers))
    log_paths = [work / f"worker{n}.log" for n in range(workers + io_workers)]
    if io_workers:
        roles = [["--queues", "compute", "--device", device]] * workers + [["--queues", "io"]] * io_workers
    else:
        roles = [[]] * workers
    app = create_app(settings)
    if store_options:
        from collation.store.location import open_store

        open_store(settings).ensure_bucket()
    processes: list[subprocess.Popen] = []
    peak = float("nan")
    try:
        started = time.perf_counter()
        for n, (log_path, role) in enumerate(zip(log_paths, roles, strict=True)):
            own = {"COLLATION_DATA_DIR": str(work / f"worker{n}")} if store_options else {}
            if "io" in role:
                own["OMP_NUM_THREADS"] = "1"
            with open(log_path, "wb") as log:
                processes.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "collation", "worker", *role],
                        env={**env, **own},
                        cwd=REPO,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                    )
                )
        from redis import Redis
        from rq import Worker

        connection = Redis.from_url(redis_url)
        while len(Worker.all(connection=connection)) < workers + io_workers:
            time.sleep(0.1)
        worker_start = time.perf_counter() - started
        client = app.test_client()
        body = {
            "manifests": urls,
            "regions": {str(m): {"whole_canvases": True} for m in range(len(urls))},
            "options": {"candidates": candidates},
        }
        start = time.perf_counter()
        r = client.post("/api/v1/collations", json=body)
        cid = r.get_json()["id"]
        while True:
            doc = client.get(f"/api/v1/collations/{cid}").get_json()
            if doc["status"] in ("finished", "failed", "cancelled"):
                break
            time.sleep(0.05)
        elapsed = time.perf_counter() - start
        if doc["status"] != "finished":
            raise SystemExit(f"the service collation ended {doc['status']}: {doc['errors']}")
    finally:
        for process in processes:
            process.terminate()
        for n, process in enumerate(processes):
            rss = wait_peak_gb(process)
            peak = rss if n == 0 else peak
        service_state(app).close()
        stop(redis)
        site.shutdown()
    return elapsed, worker_start, peak, "\n".join(p.read_text(errors="replace") for p in log_paths)


STEP_DONE = re.compile(r"collation \w+: ([a-z]+)[-\w]* job in (\d+):(\d+):([\d.]+)s")
"""RQ's line for a finished job, e.g. ``... collation 0d85c9ef: chunk-0-1-3 job in 0:00:07.826329s ...``."""


def step_times(log: str) -> str:
    """Seconds of each kind of step (prepare, features, plan, chunk, finalize) in the workers' job log."""
    seconds: dict[str, float] = {}
    counts: dict[str, int] = {}
    for step, h, m, s in STEP_DONE.findall(log):
        seconds[step] = seconds.get(step, 0.0) + 3600 * int(h) + 60 * int(m) + float(s)
        counts[step] = counts.get(step, 0) + 1
    return ", ".join(f"{step} {total:.1f} s ({counts[step]} jobs)" for step, total in seconds.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="15x15")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--difficulty", default="moderate", choices=DIFFICULTIES)
    parser.add_argument("--candidates", default=str(defaults.CANDIDATES), help="K or 'all'")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of each")
    parser.add_argument("--skip-in-process", action="store_true", help="no in-process run (large sizes)")
    parser.add_argument("--keep", help="an empty folder for the images, gt.json and the outputs (kept)")
    parser.add_argument("--show-log", action="store_true", help="print the worker's job log of the last round")
    parser.add_argument("--device", default="cpu", help="the compute worker's device (cpu, cuda, cuda:N)")
    parser.add_argument("--io-workers", type=int, default=0, help="io workers apart from the compute worker")
    parser.add_argument("--service-only", action="store_true", help="no `collate match` (the GPU checks)")
    args = parser.parse_args()
    n0, n1 = (int(v) for v in args.size.split("x"))
    candidates = None if args.candidates == "all" else int(args.candidates)
    with tempfile.TemporaryDirectory(prefix="bench-service-") as tmp:
        root = Path(args.keep or tmp)
        root.mkdir(parents=True, exist_ok=True)
        folders = [root / "A", root / "B"]
        images0, images1, gt, _ = make_pair(n0, n1, args.seed, args.difficulty)
        (root / "gt.json").write_text(json.dumps(gt.tolist()))
        for folder, images in zip(folders, (images0, images1), strict=True):
            folder.mkdir(parents=True)
            for k, image in enumerate(images):
                image.save(folder / f"{k:03d}.png")
        print(f"{n0} x {n1}, candidates {args.candidates}, {os.cpu_count()} CPUs", flush=True)
        clis, warm, svcs, log = [], [], [], ""
        for r in range(args.rounds):
            load = os.getloadavg()[0]
            if args.service_only:
                svc, worker_start, worker_peak, log = service(
                    root, root / f"service{r}", folders, candidates, device=args.device, io_workers=args.io_workers
                )
                svcs.append(svc)
                print(
                    f"round {r}: service on {args.device} with {args.io_workers} io workers, POST to finished "
                    f"{svc:.1f} s, compute worker peak RSS {worker_peak:.2f} GB (worker start {worker_start:.1f} s, "
                    f"not counted)",
                    flush=True,
                )
                print(f"  service steps: {step_times(log)}", flush=True)
                continue
            cli_seconds, cli_peak = command(folders, root / f"match{r}", candidates)
            clis.append(cli_seconds)
            if not args.skip_in_process:
                warm.append(in_process(folders, candidates))
            svc, worker_start, worker_peak, log = service(root, root / f"service{r}", folders, candidates)
            svcs.append(svc)
            print(
                f"round {r}: collate match {clis[-1]:.1f} s, peak RSS {cli_peak:.2f} GB"
                + (f" (in this process {warm[-1]:.1f} s)" if warm else "")
                + f"; service (POST to finished, fresh worker idle) {svc:.1f} s, worker peak RSS {worker_peak:.2f} GB; "
                f"ratios: time {svc / clis[-1]:.2f}, memory {worker_peak / cli_peak:.2f} (worker start "
                f"{worker_start:.1f} s, not counted; load {load:.2f} -> {os.getloadavg()[0]:.2f})",
                flush=True,
            )
            print(f"  service steps: {step_times(log)}", flush=True)
        if clis:
            cli, svc = statistics.median(clis), statistics.median(svcs)
            print(f"median: collate match {cli:.1f} s, service {svc:.1f} s, ratio service / match {svc / cli:.2f}")
        if args.show_log:
            print(log[-6000:])


if __name__ == "__main__":
    main()
