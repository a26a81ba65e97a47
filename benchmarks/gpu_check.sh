#!/usr/bin/env bash
# The GPU standing order, in two parts that each fit one 10-minute device command; results go to
# $OUT (default /tmp/gpu_check). Run from the repository root on the GPU machine, after the wheels
# it lacks are installed (../shared/gpu/fetch-wheels.sh prints the line) and PYTHONPATH holds src.
#
#   bash benchmarks/gpu_check.sh suite        # device, test suite, paper-scale benchmarks
#   bash benchmarks/gpu_check.sh determinism  # paper-scale halfcheetah-rp1 seed 0: twice
#                                             # uninterrupted, once killed and resumed; compared
#   bash benchmarks/gpu_check.sh chunks N     # paper-scale halfcheetah-rp1 seed 0 in --resume
#                                             # chunks of N seconds until the command's time ends
set -uo pipefail
OUT=${OUT:-/tmp/gpu_check}
mkdir -p "$OUT"
export MPLBACKEND=Agg PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
export RP1_JAX_CACHE=${RP1_JAX_CACHE:-/tmp/rp1-jax-cache}

same_metrics() {  # same_metrics A B: metrics.csv equal but for the wall-clock columns
    python3 - "$1" "$2" <<'EOF'
import sys
import pandas as pd
from rp1.rundir.files import TIMING_COLUMNS
a, b = (pd.read_csv(f"{d}/metrics.csv").drop(columns=list(TIMING_COLUMNS)) for d in sys.argv[1:])
same = a.equals(b)
print(f"{sys.argv[1]} vs {sys.argv[2]}: {len(a)} vs {len(b)} rows, {'identical' if same else 'DIFFERENT'}")
if not same and len(a) == len(b):
    diff = (a != b) & ~(a.isna() & b.isna())
    print("first differing row:", int(diff.any(axis=1).idxmax()), "columns:", list(diff.columns[diff.any()]))
EOF
}

case "${1:-}" in
suite)
    { nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
      python3 -c "import jax, jaxlib; print('jax', jax.__version__, 'jaxlib', jaxlib.__version__, jax.devices())"
      date -u; } 2>&1 | tee "$OUT/device.txt"
    timeout "${SUITE_S:-330}" python3 -m pytest -q -p no:cacheprovider -rfE 2>&1 | tee "$OUT/tests.txt" | tail -40
    for bench in ensemble policy; do
        timeout 120 python3 "benchmarks/bench_$bench.py" --repeats 5 2>&1 | tee "$OUT/bench_$bench.txt"
    done
    ;;
determinism)
    budget=${BUDGET:-1200}
    for run in a b; do
        /usr/bin/time -f "%e s" python3 -m rp1 train --preset halfcheetah-rp1 --seed 0 --budget "$budget" \
            --out "/tmp/det_$run" --quiet 2>&1 | tail -3
    done
    timeout -s KILL "${KILL_AFTER_S:-60}" python3 -m rp1 train --preset halfcheetah-rp1 --seed 0 \
        --budget "$budget" --out /tmp/det_c --quiet > /dev/null 2>&1
    echo "killed after ${KILL_AFTER_S:-60} s with $(($(wc -l < /tmp/det_c/metrics.csv) - 1)) rows; resuming"
    python3 -m rp1 train --preset halfcheetah-rp1 --seed 0 --budget "$budget" --out /tmp/det_c --quiet \
        --resume 2>&1 | tail -3
    { same_metrics /tmp/det_a /tmp/det_b; same_metrics /tmp/det_a /tmp/det_c; } | tee "$OUT/determinism.txt"
    for run in a b c; do cp "/tmp/det_$run/metrics.csv" "$OUT/det_${run}_metrics.csv"; done
    ;;
chunks)
    chunk=${2:-120}
    run=/tmp/hc_paper
    timeout -s INT "$chunk" python3 -m rp1 train --preset halfcheetah-rp1 --seed 0 --out "$run" --quiet
    while [ ! -f "$run/finished" ] && [ "$SECONDS" -lt "${TOTAL_S:-500}" ]; do
        timeout -s INT "$chunk" python3 -m rp1 train --preset halfcheetah-rp1 --seed 0 --out "$run" --quiet --resume
    done
    cp "$run/metrics.csv" "$OUT/hc_paper_metrics.csv"
    cp "$run/config.json" "$OUT/hc_paper_config.json"
    [ -f "$run/environment.json" ] && cp "$run/environment.json" "$OUT/hc_paper_environment.json"
    ;;
*)
    echo "usage: gpu_check.sh suite | determinism | chunks [SECONDS]" >&2
    exit 2
    ;;
esac
