"""LIBERO support: paths into the installed `libero` extra and the reference simulator."""
