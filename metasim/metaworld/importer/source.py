"""Meta-World's task source: `metaworld:[<benchmark>[-test]/]<env name>` -> the imported
`Scene`, e.g. `metaworld:pick-place-v3` (MT50's variations), `metaworld:MT10/reach-v3`,
`metaworld:ML45-test/bin-picking-v3`.

The benchmark names whose parametric variations (object and goal positions, drawn by the
package with seed 0) the episodes start from: episode k starts from variation k mod 50
(`init_states`, recorded from the reference once and cached). Suites follow the package's
benchmarks (`metasim/metaworld/suites.json`, read from it): `metaworld_mt10`,
`metaworld_mt50`, `metaworld_ml10_train`, `metaworld_ml10_test`, `metaworld_ml45_train`,
`metaworld_ml45_test`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from metasim.metaworld.importer.task_refs import DEFAULT_BENCHMARK, benchmark_tasks, parse_ref
from metasim.paths import cache_dir
from metasim.scene.schema import Scene
from metasim.scene.sources import TaskSource, task_source


@task_source("metaworld:")
class MetaworldSource(TaskSource):
    """Meta-World's tasks, imported from the package's own XMLs."""

    render_reference = (
        "the package's MuJoCo OpenGL renderer (Meta-World's): measured mean PSNR 34.4 dB "
        "corner, 34.8 corner2, 35.0 corner3, 36.7 topview, 39.9 gripperPOV (7 held-out "
        "tasks at 480x480, 2x2 samples, sites drawn; docs/rendering.md)"
    )

    def load(self, ref: str) -> Scene:
        from metasim.metaworld.importer.scene import load_task

        bench, split, task = parse_ref(ref)
        return load_task(task, bench, split)

    def suites(self) -> dict[str, list[str]]:
        out = {}
        for key, tasks in benchmark_tasks().items():
            bench, split = key.split("/")
            name = f"metaworld_{bench.lower()}" + (f"_{split}" if bench.startswith("ML") else "")
            test = "-test" if split == "test" else ""
            prefix = "" if bench == DEFAULT_BENCHMARK else f"{bench}{test}/"
            out[name] = [f"metaworld:{prefix}{t}" for t in tasks]
        return out

    def asset_roots(self) -> list[Path]:
        """The robot and init-state files metasim imports from the package (the scene
        names them by absolute path; the package's own XMLs are named by those files)."""
        return [cache_dir() / "metaworld"]

    def bench(self, ref: str, num_envs: list[int], steps: int) -> dict[str, Any]:
        """`metasim bench physics --scene metaworld:<task>`: env-steps/s next to the
        package's own loop (`metasim.metaworld.bench`)."""
        from metasim.metaworld.bench import bench_metaworld

        return bench_metaworld(ref, num_envs, steps)
