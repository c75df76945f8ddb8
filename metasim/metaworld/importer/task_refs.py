"""Meta-World task references, `metaworld:[<benchmark>[-test]/]<env name>`, and the
package's benchmark task lists (`metasim/metaworld/suites.json`, read from the package)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from metasim.errors import MetasimInputError

SUITES_FILE = Path(__file__).resolve().parent.parent / "suites.json"
BENCHMARKS = ("MT1", "MT10", "MT50", "ML1", "ML10", "ML45")
DEFAULT_BENCHMARK = "MT50"


@functools.cache
def benchmark_tasks() -> dict[str, list[str]]:
    """`<benchmark>/<split>` -> its env names, in the package's order."""
    return dict(json.loads(SUITES_FILE.read_text()))


def parse_ref(ref: str) -> tuple[str, str, str]:
    """`metaworld:ML10-test/door-close-v3` -> ("ML10", "test", "door-close-v3")."""
    body = ref.removeprefix("metaworld:")
    bench, _, task = body.rpartition("/")
    bench, _, split = (bench or DEFAULT_BENCHMARK).partition("-")
    split = split or "train"
    if bench not in BENCHMARKS or split not in ("train", "test"):
        raise MetasimInputError(
            ref,
            [f"expected metaworld:[<benchmark>[-test]/]<env name> with a benchmark in "
             f"{list(BENCHMARKS)}, got {body!r}"],
        )  # fmt: skip
    if split == "test" and bench.startswith("MT"):
        raise MetasimInputError(
            ref, [f"{bench} has no test tasks (only the ML benchmarks split train/test)"],
            f"Use metaworld:{bench}/{task}",
        )  # fmt: skip
    listed = benchmark_tasks().get(f"{bench}/{split}")
    if listed is not None and task not in listed:
        raise MetasimInputError(ref, [f"{task!r} is not in {bench}/{split}: {listed}"])
    return bench, split, task
