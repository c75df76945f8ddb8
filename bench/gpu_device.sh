#!/usr/bin/env bash
# On the lent device (bench/gpu.md, "MuJoCo Warp"): unpack the bundle that
# bench/gpu_bundle.sh made (its parts carried one a call), install it into /tmp/w once,
# put this checkout on the path with its plug-in entry points, and measure the warp
# backend's physics at 1,024 / 4,096 / 8,192 worlds (bench/warp_device.py). Each
# measurement has its own time limit and is interrupted (SIGINT: a traceback says where)
# rather than losing the call; the first includes Warp's CUDA kernel compiles (~150-200 s
# for LIBERO on an H200, cached under ~/.cache/warp for the machine's life).
#
#   bash bench/gpu_device.sh [WORLDS...]        results: $OUT/warp_device.jsonl
#   env EVAL_WORLDS="1024 4096" (EVAL_LIMIT s): also the experts' episodes, $OUT/runs
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
t0=$(date +%s)
[ -d /tmp/dev-bundle ] || { cat .cache/devparts/part.* | tar -C /tmp -xf - || exit 3; }
[ -x /tmp/w/bin/python ] || python3 -m venv /tmp/w || exit 4
/tmp/w/bin/pip install -q --no-index --find-links /tmp/dev-bundle/wheels warp-lang==1.19.0 \
    mujoco-warp==4.0.0 mujoco==4.0.0 pydantic ruamel.yaml pyyaml gymnasium pillow scipy \
    > "$OUT/pip.txt" 2>&1 || { tail -20 "$OUT/pip.txt"; exit 5; }
if ls /tmp/dev-bundle/wheels/duckdb-* > /dev/null 2>&1; then  # a bundle made with EVAL=1
    /tmp/w/bin/pip install -q --no-index --find-links /tmp/dev-bundle/wheels hydra-core \
        omegaconf rich duckdb pyarrow msgpack matplotlib >> "$OUT/pip.txt" 2>&1 || { tail -20 "$OUT/pip.txt"; exit 5; }
fi
SP=$(/tmp/w/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
mkdir -p "$SP/metasim-0.1.0.dist-info"
printf 'Metadata-Version: 2.1\nName: metasim\nVersion: 0.1.0\n' > "$SP/metasim-0.1.0.dist-info/METADATA"
cp .cache/devparts/entry_points.txt "$SP/metasim-0.1.0.dist-info/"
echo "$PWD" > "$SP/metasim.pth"
echo "installed in $(( $(date +%s) - t0 )) s"
/tmp/w/bin/python -c "import warp as wp; wp.init(); print('cuda devices', wp.get_cuda_device_count())"
# a real import of the package under the device's Python (3.12 on the device seen): its
# version, metasim's modules and the MUJOCO_GL that metasim chose (metasim/gl.py)
/tmp/w/bin/python -c "import os, sys, metasim, metasim.envs.vec_env, metasim.sim.warp
print('python', sys.version.split()[0], 'metasim', metasim.__version__, 'MUJOCO_GL', os.environ['MUJOCO_GL'])" \
    2>&1 | tee "$OUT/python_import.txt"
export MUJOCO_GL=disable  # no EGL on the device; the warp path renders with its ray tracer
WORLDS=("$@")
[ ${#WORLDS[@]} -gt 0 ] || WORLDS=(1024 4096)
measure() {
    local limit=$1; shift
    local s; s=$(date +%s)
    timeout -s INT -k 10 "$limit" /tmp/w/bin/python bench/warp_device.py "$@" \
        >> "$OUT/warp_device.jsonl" 2>> "$OUT/stderr.txt"
    echo "rc=$? $(( $(date +%s) - s )) s: $*"
}
limit=240  # the first run compiles the kernels; a new scene compiles its own few
for folder in /tmp/dev-bundle/prebuilt/*; do
    for n in "${WORLDS[@]}"; do
        measure $limit "$folder" --worlds "$n" --steps 20
        limit=90
    done
    limit=150
done
cat "$OUT/warp_device.jsonl"
if [ -n "${EVAL_WORLDS:-}" ]; then  # the experts' episodes (a bundle made with EVAL=1)
    dirs=$(ls -d /tmp/dev-bundle/prebuilt/* | paste -sd:)
    PY=/tmp/w/bin/python OUT="$OUT/runs" timeout -s INT -k 10 "${EVAL_LIMIT:-300}" \
        bash bench/warp_device_eval.sh "$dirs" $EVAL_WORLDS | tee "$OUT/warp_device_eval.jsonl"
fi
echo "total $(( $(date +%s) - t0 )) s"
