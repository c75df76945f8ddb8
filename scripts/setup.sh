#!/usr/bin/env bash
# Set up metasim on a fresh Debian machine and run the main job.
#   bash scripts/setup.sh             # install, then `metasim eval` on the built-in suite
#   bash scripts/setup.sh --no-run    # install only
#   bash scripts/setup.sh episodes=20 # install, then eval with Hydra overrides
# Installs: Debian's Mesa EGL/OSMesa (offscreen rendering), a virtualenv in .venv with
# metasim and its dev tools, and torch + torchvision (the [torch] extra: PyPI's CUDA build,
# which runs on the CPU; the only torchvision whose ops load, see pyproject.toml).
# METASIM_EXTRAS picks the extras (default: all that the tests exercise:
# dev,torch,menagerie,mjx,warp,ray,stats,lerobot,smolvla,recon,libero,rl; METASIM_EXTRAS=dev for a fast core-only install).
set -euo pipefail
cd "$(dirname "$0")/.."

# libusb-1.0-0 and libx11-6: open3d (metasim recon) needs them to import
APT_PACKAGES=(libegl1 libegl-mesa0 libgl1 libgl1-mesa-dri libglx-mesa0 libgles2 libosmesa6 chromium libusb-1.0-0 libx11-6)
if command -v apt-get >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO="sudo"
  if [ "$(id -u)" -eq 0 ] || [ -n "$SUDO" ]; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
      "${APT_PACKAGES[@]}" >/dev/null
  else
    echo "note: not root and no sudo; assuming ${APT_PACKAGES[*]} are installed" >&2
  fi
fi

PY=python3.11
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[${METASIM_EXTRAS:-dev,torch,menagerie,mjx,warp,ray,stats,lerobot,smolvla,recon,libero,rl}]"
# LeRobot (policy=lerobot, lerobot-train) cannot be a plain extra: every release pins
# torch<2.11, which would replace the [torch] pair. The script installs it with --no-deps
# plus exactly what its code imports, and checks torchvision's ops and LeRobotDataset load.
if [ -z "${METASIM_EXTRAS:-}" ] || [[ ",${METASIM_EXTRAS}," == *",lerobot,"* ]]; then
  bash scripts/install_lerobot.sh
fi
# LIBERO's tasks and robosuite's Panda (metasim.libero): --no-deps, see the script.
if [ -z "${METASIM_EXTRAS:-}" ] || [[ ",${METASIM_EXTRAS}," == *",libero,"* ]]; then
  bash scripts/install_libero.sh
fi
# triton (a dependency of PyPI's CUDA torch, used only to compile GPU kernels) bundles its
# own LLVM, which clashes with Mesa's llvmpipe (offscreen rendering): importing torch after
# a MuJoCo render segfaults in triton's native module. torch runs on the CPU without it.
.venv/bin/python -m pip uninstall -q -y triton 2>/dev/null || true
# draccus (a LeRobot dependency) ships its own test suite as a top-level `tests` package,
# which shadows this repository's tests/ on import: remove that stray folder.
SITE=$(.venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
if [ -f "$SITE/tests/test_argparse_choice_types.py" ]; then rm -rf "$SITE/tests"; fi
.venv/bin/python -c "import metasim, mujoco; print('metasim', metasim.__version__, 'mujoco', mujoco.__version__)"

if [ "${1:-}" = "--no-run" ]; then
  exit 0
fi
exec .venv/bin/metasim eval "$@"
