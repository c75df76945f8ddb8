#!/usr/bin/env bash
# The scripted LIBERO expert on the warp backend next to native MuJoCo: the same tasks,
# episodes and seeds in two runs, then the paired comparison (metasim compare).
#   bash scripts/warp_vs_native.sh OUT [EPISODES] [NUM_ENVS]
# Default: 20 episodes (init states 0-19; the expert's development inits were 31-37) of 8
# tasks across the four suites, 10 envs at a time. On 2 CPU cores (Warp's CPU device):
# about 15 min for the warp run, 1.5 min for native.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: scripts/warp_vs_native.sh OUT [EPISODES] [NUM_ENVS]}
EPISODES=${2:-20}
NUM_ENVS=${3:-10}
TASKS='[libero:libero_spatial/1,libero:libero_spatial/6,libero:libero_object/2,libero:libero_object/7,libero:libero_goal/2,libero:libero_goal/4,libero:libero_goal/8,libero:libero_10/5]'
for backend in mujoco warp; do
  .venv/bin/metasim eval --quiet suite=libero "suite.tasks=$TASKS" policy=libero_expert \
    backend=$backend episodes="$EPISODES" num_envs="$NUM_ENVS" seed=0 out="$OUT/$backend"
done
.venv/bin/metasim compare "$OUT/mujoco" "$OUT/warp" --json > "$OUT/compare.json"
.venv/bin/metasim compare "$OUT/mujoco" "$OUT/warp"
