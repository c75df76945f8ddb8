"""LIBERO support: paths into the installed `libero` extra and the reference simulator."""

from metasim.libero import kinds as kinds  # registers LIBERO's predicate and fixture kinds
