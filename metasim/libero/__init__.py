"""LIBERO support: paths into the installed `libero` extra and the reference simulator."""

from metasim.libero import source  # noqa: F401  (registers the `libero:` task source)
