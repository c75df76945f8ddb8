"""The per-task progress display of the commands that run episodes (`eval`, `collect`)."""

from __future__ import annotations

from typing import Any


def task_progress(*extra: Any) -> Any:
    """A rich `Progress` on stderr with one bar per task: its name, the bar, done/total and
    the time elapsed, then the `extra` columns. rich is imported here, on use."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (
        TextColumn("{task.description:<16}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        *extra,
    )
    return Progress(*columns, console=Console(stderr=True))
