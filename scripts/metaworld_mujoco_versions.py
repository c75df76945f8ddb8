"""Control experiment: the package's own scripted experts, in the package's own loop, on
another MuJoCo than its pinned 3.3.0, next to metasim's run of the same episodes.

    PYTHONPATH=$PWD .venv/bin/python scripts/metaworld_mujoco_versions.py \
        --mujoco 4.0.0 [--legacy-weld] --run runs/<metasim eval of metaworld_mt50> \
        [--episodes 10] [--venv /tmp/mw-4.0.0] [--out package-4.0.0.json]

Builds a venv (once) with the reference venv's packages, `mujoco==<version>` and
`metaworld==3.1.1` without its pin, plus a `sitecustomize.py` that the worker alone
turns on (`MW_CONTROL_PATCH`, popped so subprocesses do not re-import metaworld): the
package writes 11 weld values, MuJoCo 4.0 has 12 (it writes the first 11); with
`--legacy-weld` every `mujoco.mj_step` is split as mj_step1, the equality rows'
reference acceleration without MuJoCo 3.7's J̇v term (metasim's own
`legacy_equality_aref`, its source written into the shim), mj_step2. Then runs MT50 x
`--episodes` through `MetaWorldRef(python=...)` and prints the per-episode agreement
with the metasim run and with the package on 3.3.0 (the reference venv's table,
`--package33`, run if missing).
Measured (docs/log/metaworld.md, "Why some episodes differ"): on 4.0.0 with the legacy weld
the package agrees with metasim on 498 of 500 outcomes.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import textwrap
from pathlib import Path

from metasim.metaworld.reference.simulator import MetaWorldRef, ensure_venv
from metasim.metaworld.xcheck import package_table, run_outcomes, suite_tasks
from metasim.sim.mujoco.legacy import legacy_equality_aref

SHIM = """# metasim control experiment (scripts/metaworld_mujoco_versions.py), not the package
import os
if os.environ.pop("MW_CONTROL_PATCH", None) == "1":
    import mujoco
    import numpy as np
    import metaworld.sawyer_xyz_env as sx

    def reset_mocap_welds(self):
        m = self.model
        for i in range(m.neq):
            if m.eq_type[i] == mujoco.mjtEq.mjEQ_WELD:
                m.eq_data[i, :11] = np.array([0, 0, 0, 0, 0, 0, -1.0, 0, 0, 0, 5.0])

    sx.SawyerMocapBase.reset_mocap_welds = reset_mocap_welds
    if os.environ.get("MW_LEGACY_WELD") == "1":
        step1, step2 = mujoco.mj_step1, mujoco.mj_step2

        def legacy_step(m, d, nstep=1):
            for _ in range(nstep):
                step1(m, d)
                legacy_equality_aref(m, d)
                step2(m, d)

        mujoco.mj_step = legacy_step
"""


def shim() -> str:
    """The sitecustomize text: metasim's own `legacy_equality_aref` (its source: the
    control venv cannot import metasim), then SHIM."""
    src = textwrap.dedent(inspect.getsource(legacy_equality_aref))
    return f"import mujoco\nimport numpy as np\n\n\n{src}\n\n{SHIM}"


def build(venv: Path, version: str) -> Path:
    py = venv / "bin" / "python"
    if py.exists():
        return py
    ref = ensure_venv()
    base = Path(os.path.realpath(ref))
    subprocess.run([str(base), "-m", "venv", str(venv)], check=True)
    freeze = subprocess.run(
        [str(ref), "-m", "pip", "freeze"], check=True, capture_output=True, text=True
    ).stdout.split()
    reqs = [r for r in freeze if not r.lower().startswith(("mujoco", "metaworld"))]
    pip = [str(py), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, *reqs, f"mujoco=={version}"], check=True)
    subprocess.run([*pip, "--no-deps", "metaworld==3.1.1"], check=True)
    site = subprocess.run(
        [str(py), "-c", "import site; print(site.getsitepackages()[0])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    (Path(site) / "sitecustomize.py").write_text(shim())
    return py


def table(python: Path | None, episodes: int, cache: Path, env: dict[str, str]) -> dict:
    os.environ.update(env)
    try:
        with MetaWorldRef(python=python) as ref:
            rows = package_table(ref, suite_tasks("metaworld_mt50"), episodes, cache)
    finally:
        for k in env:
            os.environ.pop(k, None)
    return {k: [(o.success, o.steps) for o in v] for k, v in rows.items()}


def agreement(a: dict, b: dict) -> tuple[int, int, int]:
    """(episodes, same outcome, same outcome and first-success step) over common tasks."""
    pairs = [(x, y) for k in set(a) & set(b) for x, y in zip(a[k], b[k], strict=False)]
    return len(pairs), sum(x[0] == y[0] for x, y in pairs), sum(x == y for x, y in pairs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mujoco", required=True)
    ap.add_argument("--legacy-weld", action="store_true")
    ap.add_argument("--run", type=Path, required=True, help="metasim eval run folder")
    ap.add_argument("--episodes", type=int, default=10)
    ap.add_argument("--venv", type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--package33", type=Path, default=Path("runs/package-3.3.0.json"))
    args = ap.parse_args()
    venv = args.venv or Path(f"/tmp/mw-{args.mujoco}")
    py = build(venv, args.mujoco)
    tag = args.mujoco + ("-legacy-weld" if args.legacy_weld else "")
    env = {"MW_CONTROL_PATCH": "1", **({"MW_LEGACY_WELD": "1"} if args.legacy_weld else {})}
    other = table(py, args.episodes, args.out or Path(f"runs/package-{tag}.json"), env)
    args.package33.parent.mkdir(parents=True, exist_ok=True)
    pinned = table(None, args.episodes, args.package33, {})
    _, outcomes = run_outcomes(args.run)
    ours = {
        scene.removeprefix("metaworld_"): [
            (eps[k][0].success, eps[k][0].steps) for k in sorted(eps)
        ]
        for scene, eps in outcomes.items()
    }
    tables = {"package " + tag: other, "package 3.3.0": pinned, "metasim": ours}
    rate = {
        n: sum(s for v in t.values() for s, _ in v) / sum(len(v) for v in t.values())
        for n, t in tables.items()
    }
    print(json.dumps({
        "rates": rate,
        "package_vs_metasim": agreement(other, ours),
        "package_vs_package_3.3.0": agreement(other, pinned),
        "metasim_vs_package_3.3.0": agreement(ours, pinned),
    }, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
