#!/usr/bin/env bash
# Commit each run of chained sweeps (benchmarks/sweep_chain.sh) as it finishes, provenance only:
# nothing of a run's returns is printed or written beside it, so the runs of a plan fixed before
# them (issue 72's replication) are kept unread until all have finished.
#
#   benchmarks/commit_finished_runs.sh SWEEP PENDING LOG...
#
# Every INTERVAL seconds (default 120) it reads the chains' LOGs for "PRESET seed K: rp1 sweep
# exited 0"; each such run whose folder SWEEP/PRESET/seedK holds no lock (its process has let go)
# and that is not yet in PENDING (a folder relative to the repository's root) or in a folder DONE
# names (space-separated, relative to the root) gets its config.json, environment.json,
# metrics.csv, evaluations.csv and kept policies (policy/best.msgpack, policy/last.msgpack) copied
# to PENDING/PRESET/seedK, one line appended to PENDING/runs.md and both committed. The line
# says the run's minutes of work (its wall_s summed), rows, samples, the commits and CPUs its
# environment.json records, and "ok" where every entry's commit starts with EXPECT_COMMIT and its
# OPENBLAS_CORETYPE and XLA_FLAGS are EXPECT_CORETYPE and EXPECT_XLA_FLAGS (default: empty), else
# "CHECK". PREFIX starts each commit's message ("Replication at 10^5 (issue 72): "). ONCE=1 makes
# one pass and exits. Run it from the repository's root.
set -u
[ $# -ge 3 ] || { echo "usage: commit_finished_runs.sh SWEEP PENDING LOG..." >&2; exit 2; }
sweep=$1 pend=$2
shift 2
while true; do
    grep -h 'rp1 sweep exited 0$' "$@" 2>/dev/null | awk '{sub(/:$/, "", $5); print $3, $5}' | sort -u |
    while read -r preset seed; do
        src=$sweep/$preset/seed$seed dst=$pend/$preset/seed$seed
        [ -d "$dst" ] && continue
        for done_dir in ${DONE:-}; do
            [ -d "$done_dir/$preset/seed$seed" ] && continue 2
        done
        [ -e "$src/lock" ] && continue
        mkdir -p "$dst/policy"
        cp "$src"/{config.json,environment.json,metrics.csv,evaluations.csv} "$dst/"
        cp "$src"/policy/{best,last}.msgpack "$dst/policy/"
        provenance=$(python3 - "$dst" <<'PY'
"""One line of a run's provenance: work, rows, samples, commits, CPUs; never a return."""
import csv, json, os, sys
run = sys.argv[1]
entries = json.load(open(f"{run}/environment.json"))["environments"]
rows = list(csv.DictReader(open(f"{run}/metrics.csv")))
samples = max(int(float(row["samples"])) for row in rows)
work = sum(float(row["wall_s"]) for row in rows if row["wall_s"]) / 60
commits = sorted({entry["commit"][:7] for entry in entries})
cpus = sorted({entry["device"] for entry in entries})
flags = {(entry["xla_flags"], entry["openblas_coretype"]) for entry in entries}
wanted = (os.environ.get("EXPECT_XLA_FLAGS", ""), os.environ.get("EXPECT_CORETYPE", ""))
expected = os.environ.get("EXPECT_COMMIT", "")
ok = all(entry["commit"].startswith(expected) for entry in entries) and flags == {wanted}
print(f"{'ok' if ok else 'CHECK'} {work:.0f} min of work, {len(rows)} rows, {samples} samples, "
      f"{','.join(commits)}, {';'.join(cpus)}, {len(entries)} environment(s)")
PY
)
        echo "- $(date -u '+%F %H:%M') UTC: \`$preset\` seed $seed finished: $provenance" >>"$pend/runs.md"
        echo "$(date -u '+%F %H:%M') $preset seed $seed: $provenance"
        for _ in 1 2 3 4 5; do  # another process may hold git's index for a moment
            git add "$dst" "$pend/runs.md" &&
                git commit -q -m "${PREFIX:-}$preset seed $seed finished (pending, unread)" -- "$dst" "$pend/runs.md" &&
                break
            sleep 7
        done
    done
    [ "${ONCE:-}" = 1 ] && exit 0
    sleep "${INTERVAL:-120}"
done
