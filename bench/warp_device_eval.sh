#!/usr/bin/env bash
# Expert episodes/hour and success of LIBERO and Meta-World tasks on the warp backend, at
# 1,024 and 4,096 worlds: the prepared device script of bench/gpu.md ("MuJoCo Warp").
#
# The tasks travel prebuilt (`metasim scene prebuild ... --no-textures`: compiled models
# and run-time files; the device has no benchmark package), state only (the experts read
# no image). Each run is a plain `metasim eval` (summary.json, episodes.duckdb); one JSON
# line per run goes to stdout: suite, worlds, episodes, wall seconds, episodes/hour and
# success. The first run of each suite includes Warp's kernel compiles (cached after).
#
#   bash bench/warp_device_eval.sh [PREBUILT_DIRS] [WORLDS...]   (dirs joined by ":")
#   env: PY (python, default /tmp/w/bin/python), OUT (run folders, default runs/device),
#        SUITES (default "prebuilt_libero prebuilt_metaworld_mt10")
# CPU check here (small): PY=.venv/bin/python bash bench/warp_device_eval.sh "" 2
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-/tmp/w/bin/python}
export METASIM_PREBUILT=${1:-.cache/prebuilt-device/libero-object:.cache/prebuilt-device/libero-goal:.cache/prebuilt-device/mt10}
shift || true
WORLDS=("$@")
[ ${#WORLDS[@]} -gt 0 ] || WORLDS=(1024 4096)
OUT=${OUT:-runs/device}
SUITES=${SUITES:-prebuilt_libero prebuilt_metaworld_mt10}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}

for suite in $SUITES; do
    case $suite in
        *libero*) policy=libero_expert ;;
        *metaworld*) policy=metaworld_expert ;;
        *) echo "no expert known for suite $suite" >&2; exit 2 ;;
    esac
    for n in "${WORLDS[@]}"; do
        run="$OUT/${suite}-w$n"
        rm -rf "$run"
        "$PY" -m metasim.cli eval --quiet "suite=$suite" "policy=$policy" backend=warp \
            "num_envs=$n" "episodes=$n" "out=$run" >/dev/null
        "$PY" - "$run" "$suite" "$n" <<'EOF'
import json, sys
run, suite, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = json.load(open(f"{run}/summary.json"))
episodes = sum(t["n"] for t in s["tasks"].values())
wall = s["wall_time_s"]
print(json.dumps({
    "suite": suite, "worlds": n, "episodes": episodes, "wall_s": round(wall, 1),
    "episodes_per_hour": round(3600 * episodes / wall),
    "success": {k: [t["successes"], t["n"]] for k, t in s["tasks"].items()},
    "mean_success": s["aggregate"]["mean"]["value"],
}), flush=True)
EOF
    done
done
