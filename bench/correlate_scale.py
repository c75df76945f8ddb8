"""Time and memory of `metasim correlate`'s analysis against study size.

    PYTHONPATH=. .venv/bin/python bench/correlate_scale.py

Generates studies of tasks × policies rows with episode counts (sim 50, real 20; the
generator of tests/correlate/test_correlate_scale.py) and prints, per size, the wall and
CPU seconds of `analyze` at the given replicates and the process's peak RSS so far.
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from metasim.correlate.analysis import BootstrapSpec, analyze
from metasim.correlate.study import load_study_csv
from tests.correlate.test_correlate_scale import write_study

SIZES = [(90, 20, 500), (90, 20, 2000), (90, 40, 2000), (180, 20, 2000), (500, 20, 2000)]


def main() -> None:
    folder = Path(tempfile.mkdtemp())
    for tasks, policies, reps in SIZES:
        study = load_study_csv(write_study(folder / f"{tasks}x{policies}.csv", tasks, policies))
        wall, cpu = time.perf_counter(), time.process_time()
        analyze(study, BootstrapSpec(reps=reps))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"{tasks} tasks x {policies} policies ({tasks * policies} rows), {reps} reps: "
            f"wall {wall:.1f} s, cpu {cpu:.1f} s, peak RSS {rss:.0f} MiB",
            flush=True,
        )


if __name__ == "__main__":
    main()
