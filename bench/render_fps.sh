#!/usr/bin/env bash
# Frames/s of MuJoCo Warp's ray tracer (render=warp) next to MuJoCo's OpenGL on this
# machine: `metasim bench cameras` measures the env's observation (every camera of every
# env, rendered by the warp rig) and a bare OpenGL mujoco.Renderer loop over the same
# frames in one run, interleaved; its `ratio` is Warp frames/s over OpenGL frames/s.
# Two cameras per scene (LIBERO: agentview + wrist; Meta-World: corner2 + topview), 1 and
# 16 envs, 128² and 224², samples per pixel per axis $SPPS (default 1 2 3; Meta-World at
# the first of them).
#   PYTHONPATH=. MUJOCO_GL=egl bash bench/render_fps.sh > fps.jsonl
set -euo pipefail
PY=${PY:-.venv/bin/python}
SPPS=${SPPS:-1 2 3}
run() {  # scene, cameras, envs, size, spp
    $PY -m metasim.cli bench cameras --scene "$1" --cameras $2 --num-envs "$3" \
        --size "$4" "$4" --spp "$5" --render warp --repeats 3 2>/dev/null |
        $PY -c 'import json,sys; r=json.load(sys.stdin); print(json.dumps({k: r[k] for k in
            ("scene","num_envs","cameras","metasim_fps","bare_fps","ratio")} | {"spp": r["raytrace"]["samples_per_pixel"]}))'
}
for size in 128 224; do
    for envs in 1 16; do
        for spp in $SPPS; do
            run libero:libero_spatial/0 "agentview robot0_eye_in_hand" "$envs" "$size" "$spp"
        done
        run metaworld:MT10/reach-v3 "corner2 topview" "$envs" "$size" "${SPPS%% *}"
    done
done
