"""LIBERO support: paths into the installed `libero` extra and the reference simulator."""

# What the plug-in registers (light imports: no model compiled, no reference venv started).
from metasim.libero import axes as _axes  # noqa: F401  (the background_texture axis)
from metasim.libero import cli as _cli  # noqa: F401  (the `metasim libero` verb)
from metasim.libero import kinds as _kinds  # noqa: F401  (predicate and fixture kinds)
from metasim.libero import source as _source  # noqa: F401  (the `libero:` task source)
from metasim.libero.expert import policy as _expert  # noqa: F401  (kind libero_expert)
