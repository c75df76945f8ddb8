"""Tasks: success predicates and progress as pure functions of state, and reset sampling."""

from metasim.tasks.predicates import TaskView, compile_predicate
from metasim.tasks.task import TaskRuntime

__all__ = ["TaskRuntime", "TaskView", "compile_predicate"]
