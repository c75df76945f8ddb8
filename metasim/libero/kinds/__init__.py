"""LIBERO's predicate and fixture kinds: their schema models (`models`), their evaluators
(`predicates`) and builders (`fixtures`), registered with the core's open kinds when
imported (metasim.libero imports this package; nothing is compiled at import)."""

from metasim.libero.kinds import fixtures, models, predicates

__all__ = ["fixtures", "models", "predicates"]
