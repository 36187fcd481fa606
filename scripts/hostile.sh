#!/usr/bin/env bash
# The hostile harness, long version: schemathesis with many examples per operation, then every
# fault, exhaustion and load test of tests/hostile, printing their figures (-s, in one process: -n 0). Usage:
#   scripts/hostile.sh [examples per operation, default 200] [rounds of the DELETE/POST race, default 40]
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
export PYTHONPATH=$PWD HOSTILE_EXAMPLES=${1:-200} HOSTILE_ROUNDS=${2:-40}
"$PYTHON" -m pytest tests/hostile/test_api_contract.py tests/hostile/test_faults.py tests/hostile/test_exhaustion.py \
    tests/hostile/test_load.py -p no:cacheprovider -q -s -n 0
