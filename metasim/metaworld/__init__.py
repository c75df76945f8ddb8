"""Meta-World (PyPI `metaworld==3.1.1`: 50 Sawyer tasks, MT1/MT10/MT50/ML1/ML10/ML45) as a
metasim benchmark plug-in (declared in pyproject.toml's `metasim.plugins`), one package
split by role as `metasim.libero` is:

- `importer/`: a task XML -> a typed `Scene` (the Sawyer as a mocap-driven robot, the
  task's world as a fixture, the package's variations as recorded initial states); the
  `metaworld:` task source and its suites;
- `kinds.py`: the `metaworld_world` fixture kind and the `metaworld_success` predicate;
- `state.py`, `success.py`, `obs.py` (`objects.py`, `goal_space.py`): the package's success
  test and 39-D observation restated over metasim's state; `terms.py`: the observation
  terms a policy builds that observation from; `expert.py`: `policy=metaworld_expert`;
- `checks/`: the field-by-field comparison with the package's own compile;
- `reference/`: the package itself on its own MuJoCo 3.3.0 in its own venv
  (`.cache/metaworld-ref`, built on first use) and the worker that drives it over a pipe.

Facts about the package (assets, action, cameras, variations, success) are in
docs/metaworld.md.
"""

# What the plug-in registers (light imports: no model compiled, no reference venv started).
from metasim.metaworld import benchmark as _benchmark  # noqa: F401  (its Benchmark entry)
from metasim.metaworld import cli as _cli  # noqa: F401  (the `metasim metaworld` verb)
from metasim.metaworld import expert as _expert  # noqa: F401  (kind metaworld_expert)
from metasim.metaworld import kinds as _kinds  # noqa: F401  (fixture and predicate kinds)
from metasim.metaworld import terms as _terms  # noqa: F401  (observation terms)
from metasim.metaworld.importer import source as _source  # noqa: F401  (`metaworld:` source)
