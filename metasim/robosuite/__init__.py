"""robosuite 1.4.0's own tasks (Lift, Stack, PickPlaceCan, NutAssemblySquare, Door) as a
metasim benchmark plug-in (declared in pyproject.toml's `metasim.plugins`):

- `tasks.py`: the task table (success as predicates, horizons, placed bodies, experts);
- `importer/`: robosuite's own MJCF and reset distribution, exported once through the
  reference (`export.py`); the scene on them (`scene.py`); the `robosuite:` source;
- `kinds.py`: robosuite's success tests as predicate kinds;
- `reference/`: robosuite itself in its reference venv (robosuite 1.4.0, MuJoCo 3.17),
  which LIBERO's worker shares;
- `checks/`: success agreement, model diff and cross-check against it;
- what LIBERO, built on robosuite, takes from it: the Panda on its mount
  (`importer/robot.py`), how a success check reads a state (`success.py`), the hand's
  down frame (`expert_machine.py`), the renderer's model-diff entries
  (`checks/modeldiff_listed.py`).
"""

# What the plug-in registers (light imports: no model compiled, no reference venv started).
from metasim.robosuite import benchmark as _benchmark  # noqa: F401  (its Benchmark entry)
from metasim.robosuite import cli as _cli  # noqa: F401  (the `metasim robosuite` verb)
from metasim.robosuite import expert as _expert  # noqa: F401  (kind robosuite_expert)
from metasim.robosuite import fixtures as _fixtures  # noqa: F401  (fixture kind mjcf)
from metasim.robosuite import kinds as _kinds  # noqa: F401  (predicate kinds)
from metasim.robosuite import terms as _terms  # noqa: F401  (hand_quat_xyzw)
from metasim.robosuite.importer import source as _source  # noqa: F401  (`robosuite:` source)
