"""Tasks: success predicates and progress as pure functions of state, and reset sampling."""

from metasim.tasks import libero_predicates as _libero_predicates  # registers its kinds
from metasim.tasks.predicates import TaskView, compile_predicate
from metasim.tasks.task import TaskRuntime

del _libero_predicates

__all__ = ["TaskRuntime", "TaskView", "compile_predicate"]
