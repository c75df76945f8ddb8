"""Meta-World (PyPI `metaworld==3.1.1`: 50 Sawyer tasks, MT1/MT10/MT50/ML1/ML10/ML45) as a
metasim benchmark, one package split by role as `metasim.libero` is:

- `reference/`: the package itself on its own MuJoCo 3.3.0 in its own venv
  (`.cache/metaworld-ref`, built on first use) and the worker that drives it over a pipe.

Facts about the package (assets, action, cameras, variations, success) are in
docs/metaworld.md. Not yet declared in pyproject.toml's `metasim.plugins`: it registers
nothing so far.
"""
