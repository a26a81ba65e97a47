#!/usr/bin/env bash
# Issue 76's plan (benchmarks/RESULTS.md, "README's first command, again"), as it was fixed before
# its runs. Two steps:
#
#   benchmarks/first_command_plan.sh counts OUT SEEDS
#       The four candidates (hopper-first and halfcheetah-first at 7,000 and 10,000 samples) for
#       SEEDS (0-9, then 10-19 for the chosen one: set PRESETS and BUDGETS to it) on two
#       realisations, OUT/<realisation>/<budget>/<preset>/seed<k>: this CPU as it is (XLA_FLAGS
#       unset) and with XLA_FLAGS=--xla_cpu_max_isa=AVX2. Each run's best policy is then
#       evaluated afresh into its folder (evaluate-best-seed1000.json), and the counts printed by
#       `first_command.py --afresh`. Resumes: finished runs and evaluations are kept.
#   benchmarks/first_command_plan.sh time PRESET BUDGET
#       README's first command with that candidate, seed 0, from a fresh clone of this checkout's
#       HEAD in a new folder, with HOME an empty folder (no pip or JAX compilation cache); prints
#       the seconds of the whole line and of the install. Run it on idle cores.
#
# RP1 names the rp1 command for `counts` (default: rp1 on PATH), PYTHON the Python that has rp1 to
# count with (python3), WORKERS the runs at a time (2).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rp1=${RP1:-rp1}
die() { echo "first_command_plan.sh: $*" >&2; exit 2; }

counts() {
    local out=$1 seeds=$2 realisation budget dir run
    for realisation in this-cpu avx2-cap; do
        for budget in ${BUDGETS:-7000 10000}; do
            dir=$out/$realisation/$budget
            (
                if [ "$realisation" = avx2-cap ]; then
                    export XLA_FLAGS=--xla_cpu_max_isa=AVX2
                else
                    unset XLA_FLAGS
                fi
                "$rp1" sweep --presets "${PRESETS:-hopper-first,halfcheetah-first}" --seeds "$seeds" \
                    --budget "$budget" --workers "${WORKERS:-2}" --out "$dir"
                for run in "$dir"/*/seed*; do
                    [ -s "$run/evaluate-best-seed1000.json" ] && continue
                    "$rp1" evaluate "$run" --seed 1000 --episodes 10 --json >"$run/evaluate.tmp"
                    mv "$run/evaluate.tmp" "$run/evaluate-best-seed1000.json"
                done
            )
            echo "== $realisation, $budget samples"
            "${PYTHON:-python3}" "$here/first_command.py" "$dir" --afresh evaluate-best-seed1000.json
        done
    done
}

timed() {
    local preset=$1 budget=$2 work start installed ended
    unset RP1_JAX_CACHE XLA_FLAGS PIP_CACHE_DIR  # the caches a new user's machine has: none
    work=$(mktemp -d)
    git clone -q "$here/.." "$work/rp1"
    mkdir "$work/home"
    cd "$work/rp1"
    start=$(date +%s.%N)
    HOME=$work/home python3 -m venv .venv
    HOME=$work/home .venv/bin/pip install -q -e .
    installed=$(date +%s.%N)
    HOME=$work/home .venv/bin/rp1 train --preset "$preset" --budget "$budget" --out runs/"$preset" --quiet
    ended=$(date +%s.%N)
    echo "$preset to $budget: $(echo "$ended - $start" | bc) s in all, $(echo "$installed - $start" | bc) s installing (HEAD $(git rev-parse --short HEAD), $work)"
}

case ${1:-} in
    counts) [ $# -eq 3 ] || die "usage: counts OUT SEEDS"; counts "$2" "$3" ;;
    time) [ $# -eq 3 ] || die "usage: time PRESET BUDGET"; timed "$2" "$3" ;;
    *) die "usage: first_command_plan.sh counts OUT SEEDS | time PRESET BUDGET" ;;
esac
