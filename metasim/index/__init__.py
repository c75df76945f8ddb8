"""`metasim runs`: every run folder under a root, listed, and queryable with SQL.

`find_runs` finds and reads the run folders (never locking or writing them), `describe`
flattens one into a row, `run_sql` answers a query over the views `runs` and `episodes`.
"""

from metasim.index.query import open_index, run_sql
from metasim.index.rows import COLUMNS, describe
from metasim.index.scan import RunEntry, find_runs

__all__ = ["COLUMNS", "RunEntry", "describe", "find_runs", "open_index", "run_sql"]
