#!/usr/bin/env bash
# Run a list of (preset, seed) runs in a fixed order, one at a time, with one `rp1 sweep` each.
#
#   benchmarks/sweep_chain.sh RUNS OUT [rp1 sweep options...]
#
# RUNS: a text file, one "preset seed [minutes]" per line (# starts a comment); minutes, where
# given, is the run's projected work. OUT: the sweep's output directory. The options are passed
# to every `rp1 sweep` (e.g. --scale small --budget 100000 --set model.dealing=round-robin).
# Start it K times on one RUNS and OUT to keep K cores busy: each chain walks the whole list,
# skipping a run another chain owns ("running elsewhere", by the run's lock) or has finished, so
# a core that frees starts the next run in the list at once, which `rp1 sweep --workers K` over a
# product of presets and seeds cannot do for a list that is not such a product. Interrupted, it
# resumes as `rp1 sweep` does. The order changes nothing in a run. Set RP1 to the rp1 command to
# use (default: rp1 on PATH). Set UNTIL to a time `date -d` reads ("2026-11-28 07:20 UTC") when
# the machine will go away then: a run whose minutes would end after it is not started, since an
# unfinished run is lost with the machine, and the chain goes on to the next run that fits. Set
# DONE to folders of finished runs kept elsewhere (space-separated, e.g. the committed copies on a
# new machine whose OUT is empty): a run whose DIR/preset/seedN folder exists in one is skipped.
set -euo pipefail
runs=$1 out=$2
shift 2
rp1=${RP1:-rp1}
die() { echo "sweep_chain.sh: $*" >&2; exit 2; }
until_s=
if [ -n "${UNTIL:-}" ]; then
    until_s=$(date -d "$UNTIL" +%s) || die "UNTIL=$UNTIL is not a time date -d reads"
fi
grep -v '^\s*\(#\|$\)' "$runs" | while read -r preset seed minutes _; do
    case $minutes in
        *[!0-9]*) die "$runs: minutes '$minutes' of $preset seed $seed is not a whole number" ;;
    esac
    for done_dir in ${DONE:-}; do
        [ -d "$done_dir/$preset/seed$seed" ] && continue 2
    done
    if [ -n "$until_s" ] && [ -n "$minutes" ] && (( $(date +%s) + 60 * minutes > until_s )); then
        echo "$(date -u '+%F %T') $preset seed $seed: not started, its $minutes min end after $UNTIL"
        continue
    fi
    echo "$(date -u '+%F %T') $preset seed $seed"
    rc=0
    "$rp1" sweep --presets "$preset" --seeds "$seed" --workers 1 --out "$out" "$@" </dev/null || rc=$?
    echo "$(date -u '+%F %T') $preset seed $seed: rp1 sweep exited $rc"
done
