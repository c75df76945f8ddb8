"""LIBERO support: paths into the installed `libero` extra and the reference simulator."""

from metasim.libero import kinds as kinds  # registers LIBERO's predicate and fixture kinds
from metasim.libero import source as source  # registers the `libero:` task source
