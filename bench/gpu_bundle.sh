#!/usr/bin/env bash
# Build the device bundle of bench/gpu.md ("MuJoCo Warp"): the wheels for the device's
# Python (warp-lang, mujoco-warp, mujoco and the core dependencies metasim's warp path
# imports), the prebuilt task folders, split into parts that fit one `run` call's carry
# (64 MiB), and the entry-point table the device's metasim needs (it is put on the path,
# not pip-installed: the device has no setuptools and no index).
#
#   bash bench/gpu_bundle.sh [PREBUILT_FOLDER...]      env: PYV (device Python, 3.12),
#                                                      EVAL=1 (+ what `metasim eval` needs)
#
# Writes .cache/devparts/part.* (carry one a call) and .cache/devparts/entry_points.txt;
# on the device: `bash bench/gpu_device.sh` (unpacks, installs, measures). The default
# folders (29 MB and 6 MB, state only):
#   .venv/bin/metasim scene prebuild libero:libero_goal/2 --suite libero --no-textures \
#       --out .cache/prebuilt-device/libero-goal
#   .venv/bin/metasim scene prebuild metaworld:MT10/pick-place-v3 --no-textures \
#       --out .cache/prebuilt-device/mt-one
set -euo pipefail
cd "$(dirname "$0")/.."
PYV=${PYV:-3.12}
PIP=${PIP:-.venv/bin/pip}
FOLDERS=("$@")
[ ${#FOLDERS[@]} -gt 0 ] || FOLDERS=(.cache/prebuilt-device/libero-goal .cache/prebuilt-device/mt-one)
B=.cache/dev-bundle
rm -rf "$B" .cache/devparts && mkdir -p "$B/wheels" "$B/prebuilt" .cache/devparts
# pure-Python wheels (any Python) and the compiled ones for the device's Python
$PIP download -q --no-deps -d "$B/wheels" warp-lang==1.19.0 mujoco-warp==4.0.0 mujoco==4.0.0 \
    absl-py etils glfw pyopengl fsspec importlib_resources zipp pydantic==2.14.4 \
    annotated-types typing-extensions typing-inspection ruamel.yaml==0.19.1 \
    gymnasium==1.4.0 cloudpickle farama-notifications
$PIP download -q --no-deps --only-binary=:all: --python-version "$PYV" \
    --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux_2_17_x86_64 -d "$B/wheels" numpy==2.2.6 pydantic-core==2.50.5 \
    pillow==13.0.0 scipy==1.17.1 mujoco-core==4.0.0 mujoco-studio==4.0.0 websockets==17.4 \
    pyyaml==6.0.4
if [ -n "${EVAL:-}" ]; then  # bench/warp_device_eval.sh: metasim eval's own dependencies
    $PIP download -q --no-deps -d "$B/wheels" hydra-core==1.3.8 omegaconf==2.3.1 \
        rich==15.0.0 markdown-it-py mdurl pygments packaging pyparsing cycler python-dateutil tzdata
    # antlr4-python3-runtime 4.9.3 (hydra's parser) has no wheel on PyPI: build one
    $PIP wheel -q --no-deps -w "$B/wheels" antlr4-python3-runtime==4.9.3
    $PIP download -q --no-deps --only-binary=:all: --python-version "$PYV" \
        --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 \
        --platform manylinux_2_17_x86_64 -d "$B/wheels" duckdb==2.0.1 pyarrow==26.0.1 \
        msgpack==1.2.4 matplotlib==3.11.2 contourpy==1.3.3 kiwisolver==1.5.1 fonttools==4.68.0
fi
for f in "${FOLDERS[@]}"; do cp -r "$f" "$B/prebuilt/"; done
tar -C .cache -cf .cache/devparts/bundle.tar dev-bundle
(cd .cache/devparts && split -b 55m bundle.tar part. && rm bundle.tar)
# the plug-ins' entry points, as an installed metasim declares them
sed -n '/^\[project.entry-points."metasim.plugins"\]/,/^\[/p' pyproject.toml | sed '$d' \
    | sed 's/^\[project.entry-points."metasim.plugins"\]/[metasim.plugins]/; s/"//g' \
    > .cache/devparts/entry_points.txt
ls -la .cache/devparts
