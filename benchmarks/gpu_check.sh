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
#   bash benchmarks/gpu_check.sh profile      # one short paper-scale run under cProfile: where
#                                             # an iteration's time outside fit/policy/collection goes
#   bash benchmarks/gpu_check.sh concurrency  # k = 1, 2, 4, 8 copies of one paper-scale run at once,
#                                             # CONC_S seconds each; throughput and identity
#   bash benchmarks/gpu_check.sh pilot S      # paper-scale RP1 and Greedy on HalfCheetah, seeds
#                                             # PILOT_SEEDS, all at once for S seconds (--resume
#                                             # continues them); run files to $OUT/pilot.tar.gz
#
#   bash benchmarks/gpu_check.sh seeds S      # a ten-seed cell on one GPU: small-scale halfcheetah-rp1,
#                                             # seeds 0-9 as ten processes (--workers 10, one shared
#                                             # compilation cache) to 10^5 for at most S (300) seconds
#                                             # (resumes), then paper-scale seeds 0-9 to SEEDS_BUDGET
#                                             # (10^4), SEEDS_PAPER_S (120) seconds: samples reached,
#                                             # wall times and the run files to $OUT
#   bash benchmarks/gpu_check.sh cell S       # issue 72's standing order: the cells of Table 1 at
#                                             # paper scale to 10^4 (CELL_BUDGET), in the issue's
#                                             # order (CELLS), each seeds 0-9 (CELL_SEEDS) as ten
#                                             # processes sharing the GPU (CELL_WORKERS), one after
#                                             # the other for at most S (540) seconds in all; a cell
#                                             # benchmarks/runs/paper1e4 (CELLS_DONE) holds whole is
#                                             # skipped. Each cell's time and device to
#                                             # $OUT/cells.txt, its finished runs (result files and
#                                             # kept policies, as rp1 export copies them) to
#                                             # $OUT/cells/; an unfinished cell starts afresh next time
#
# PRESET_ARGS (default empty: paper scale) is added to every train command of the last four, e.g.
# '--scale small' to try the script on a CPU, or '--checkpoint-every 60' to measure a run that
# checkpoints about once a minute against one that checkpoints every iteration.
set -uo pipefail
OUT=${OUT:-/tmp/gpu_check}
mkdir -p "$OUT"
export MPLBACKEND=Agg PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
export RP1_JAX_CACHE=${RP1_JAX_CACHE:-/tmp/rp1-jax-cache}
PRESET_ARGS=${PRESET_ARGS:-}

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
profile)
    python3 -m cProfile -o /tmp/profile.pstats -m rp1 train --preset halfcheetah-rp1 --seed 0 \
        --budget "${PROFILE_BUDGET:-3000}" --out /tmp/profiled --quiet --overwrite $PRESET_ARGS
    python3 - <<'EOF' | tee "$OUT/profile.txt"
import pstats
stats = pstats.Stats("/tmp/profile.pstats")
stats.sort_stats("cumulative").print_stats("src/rp1/|compile", 60)
stats.sort_stats("tottime").print_stats(25)
EOF
    cp /tmp/profiled/metrics.csv "$OUT/profiled_metrics.csv"
    ;;
concurrency)
    for k in ${CONC_K:-1 2 4 8}; do
        for copy in $(seq 0 $((k - 1))); do
            timeout -s INT "${CONC_S:-60}" python3 -m rp1 train --preset halfcheetah-rp1 --seed 0 \
                --out "/tmp/conc/k$k/copy$copy" --quiet --overwrite $PRESET_ARGS > /dev/null 2>&1 &
        done
        wait
    done
    python3 benchmarks/concurrent_runs.py /tmp/conc | tee "$OUT/concurrency.txt"
    ;;
pilot)
    for preset in halfcheetah-rp1 halfcheetah-greedy; do
        for seed in ${PILOT_SEEDS:-0 1 2 3}; do
            run="/tmp/pilot/$preset/seed$seed"
            resume=$([ -f "$run/config.json" ] && echo --resume || echo)
            timeout -s INT "${2:-240}" python3 -m rp1 train --preset "$preset" --seed "$seed" \
                --out "$run" --quiet $resume $PRESET_ARGS > "/tmp/pilot-$preset-$seed.log" 2>&1 &
        done
    done
    wait
    for run in /tmp/pilot/*/seed*; do
        echo "$run: $(($(wc -l < "$run/metrics.csv") - 1)) iterations, $(tail -1 "$run/metrics.csv" | cut -d, -f2) samples"
    done | tee "$OUT/pilot.txt"
    tar -czf "$OUT/pilot.tar.gz" -C /tmp --exclude checkpoint --exclude policy --exclude lock pilot
    ;;
seeds)
    small=/tmp/seeds/small
    { date -u; /usr/bin/time -f "small-scale cell, ten processes: %e s" timeout -s INT "${2:-300}" \
        python3 -m rp1 sweep --presets halfcheetah-rp1 --seeds 0-9 --scale small --budget 100000 \
        --workers 10 --out "$small" 2>&1 | tail -3
      for run in "$small"/halfcheetah-rp1/seed*; do
          echo "$run: $(($(wc -l < "$run/metrics.csv") - 1)) iterations, $(tail -1 "$run/metrics.csv" | cut -d, -f2) samples"
      done; } 2>&1 | tee "$OUT/seeds_small.txt"
    budget=${SEEDS_BUDGET:-10000}
    { /usr/bin/time -f "paper scale, ten processes: %e s" timeout -s INT "${SEEDS_PAPER_S:-120}" \
        python3 -m rp1 sweep --presets halfcheetah-rp1 --seeds 0-9 --budget "$budget" \
        --workers 10 --out /tmp/seeds/processes 2>&1 | tail -2
      for run in /tmp/seeds/processes/halfcheetah-rp1/seed*; do
          echo "$run: $(($(wc -l < "$run/metrics.csv") - 1)) iterations, $(tail -1 "$run/metrics.csv" | cut -d, -f2) samples"
      done; } 2>&1 | tee "$OUT/seeds_paper.txt"
    tar -czf "$OUT/seeds.tar.gz" -C /tmp --exclude checkpoint --exclude policy --exclude lock seeds
    ;;
cell)
    cells=/tmp/cells seeds=${CELL_SEEDS:-0-9}
    wanted=$(python3 -c "from rp1.config.sources import parse_seeds; print(len(parse_seeds('$seeds')))")
    { nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; git rev-parse --short HEAD; } \
        2>&1 | tee "$OUT/cells.txt"
    for preset in ${CELLS:-halfcheetah-rp1 halfcheetah-greedy hopper-rp1 hopper-greedy halfcheetah-vr hopper-vr}; do
        held=$(find "${CELLS_DONE:-benchmarks/runs/paper1e4}/$preset" -name metrics.csv 2>/dev/null | wc -l)
        [ "$held" -ge "$wanted" ] && continue
        left=$((${2:-540} - SECONDS))
        [ "$left" -ge 60 ] || break
        start=$(date -u +%H:%M:%S) && began=$SECONDS
        timeout -s INT "$left" python3 -m rp1 sweep --presets "$preset" --seeds "$seeds" \
            --budget "${CELL_BUDGET:-10000}" --workers "${CELL_WORKERS:-10}" --out "$cells" \
            $PRESET_ARGS > "/tmp/cells-$preset.log" 2>&1
        echo "$preset seeds $seeds: rp1 sweep exited $? at $(date -u +%H:%M:%S) UTC, started $start, $((SECONDS - began)) s" | tee -a "$OUT/cells.txt"
    done
    [ -d "$cells" ] && { python3 -m rp1 status "$cells"; python3 -m rp1 export "$cells" --out "$OUT/cells"; } \
        2>&1 | tee -a "$OUT/cells.txt"
    ;;
*)
    echo "usage: gpu_check.sh suite | determinism | chunks [SECONDS] | profile | concurrency | pilot [SECONDS] | seeds [SECONDS] | cell [SECONDS]" >&2
    exit 2
    ;;
esac
