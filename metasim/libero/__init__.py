"""LIBERO as a metasim benchmark plug-in (declared in pyproject.toml's `metasim.plugins`),
one package split by role:

- `importer/`: a LIBERO task (BDDL problem, asset models, robot, init states) -> a typed
  `Scene`; the `libero:` task source and its suites;
- `kinds/`: LIBERO's predicate and fixture kinds;
- `reference/`: the reference simulator (robosuite 1.4.0 + LIBERO on MuJoCo 3.17 in its
  own venv) and its worker;
- `checks/`: parity, model-field diff, success cross-check, the MJX support matrix;
- `expert/`: the scripted expert (`policy=libero_expert`);
- `axes.py`: the background-texture perturbation axis; `bench.py`: `bench physics` next to
  the reference; `cli.py`, `cli_xcheck.py`: the `metasim libero` verb.

LIBERO is built on robosuite: the Panda on its mount, the reference venv, robosuite's
success reading and contact test, its renderer's model-diff entries are
`metasim.robosuite`'s, which this package imports (its declared base, `BASE`).
"""

# What the plug-in registers (light imports: no model compiled, no reference venv started).
from metasim.libero import axes as _axes  # noqa: F401  (the background_texture axis)
from metasim.libero import benchmark as _benchmark  # noqa: F401  (its Benchmark entry)
from metasim.libero import cli as _cli  # noqa: F401  (the `metasim libero` verb)
from metasim.libero import kinds as _kinds  # noqa: F401  (predicate and fixture kinds)
from metasim.libero.expert import policy as _expert  # noqa: F401  (kind libero_expert)
from metasim.libero.importer import source as _source  # noqa: F401  (the `libero:` task source)

BASE = "robosuite"  # the one plug-in this one may import (tests/test_layering.py)
