"""SQL over every run under a root: DuckDB views `runs` and `episodes`, read only.

`runs` holds one row per run folder (`rows.COLUMNS`, with the whole manifest as JSON in
`manifest`, so `manifest->>'$.config.policy.path'` reaches any field); `episodes` is
every run's episodes.parquet in one view, with the run's folder (`run`) in front of the
parquet's own columns (matched by name; a column one run lacks is NULL there).

The database lives in memory: the parquet files are read into it, then DuckDB's access
to files is switched off and the configuration locked, so a query can neither read nor
write any file (no `COPY ... TO` into a run folder, no ATTACH), and spilled data go to a
private temporary folder. No run folder is locked or written: episodes.duckdb is never
opened. A query is one statement (several are refused, not run one after another), and
DuckDB's memory and its spill folder are each held to METASIM_SQL_MEMORY_BYTES (default:
a quarter of this machine's memory, at least 256 MiB; DuckDB's own default is 80%):
past it the query is refused naming the setting. Only runs whose manifest could be read
have their episodes in `episodes` (a run's episodes are read by its manifest's config).
"""

from __future__ import annotations

import csv
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from metasim.errors import MetasimInputError, one_line
from metasim.index.rows import COLUMNS, describe
from metasim.index.scan import RunEntry, find_runs
from metasim.yamlio import LIMITS, limit

FETCH = 10_000  # rows fetched at a time while writing CSV
MEMORY = "METASIM_SQL_MEMORY_BYTES"
LIMITS[MEMORY] = 0  # unset: a quarter of this machine's memory (module doc)
MIN_MEMORY = 256 << 20


def memory_limit() -> int:
    """DuckDB's memory limit for `runs --sql`, in bytes (module doc)."""
    chosen = limit(MEMORY)
    if chosen:
        return chosen
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 4 << 30
    return max(MIN_MEMORY, total // 4)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _create_runs(con: Any, rows: list[dict[str, Any]]) -> None:
    cols = ", ".join(f"{name} {kind}" for name, kind in COLUMNS.items())
    con.execute(f"CREATE TABLE _runs ({cols})")
    if rows:
        marks = ", ".join("?" for _ in COLUMNS)
        con.executemany(f"INSERT INTO _runs VALUES ({marks})", [list(r.values()) for r in rows])
    con.execute("CREATE VIEW runs AS SELECT * FROM _runs")


def _create_episodes(con: Any, entries: list[RunEntry]) -> None:
    """Load every episodes.parquet that `read_episode_table` accepts (a damaged one is
    left out: its run's status says why, and `run_sql` warns of it)."""
    files = [e for e in entries if e.queryable]
    if files:
        listed = ", ".join(_quote(str(e.parquet)) for e in files)
        con.execute(
            "CREATE TABLE _files AS SELECT * FROM (VALUES "
            + ", ".join(f"({_quote(str(e.parquet))}, {_quote(e.run)})" for e in files)
            + ") t(file, run)"
        )
        con.execute(
            "CREATE TABLE _episodes AS SELECT f.run, p.* EXCLUDE (filename) FROM "
            f"read_parquet([{listed}], union_by_name = true, filename = true) p "
            "JOIN _files f ON p.filename = f.file"
        )
    else:
        con.execute(
            "CREATE TABLE _episodes (run VARCHAR, task VARCHAR, cell VARCHAR, episode BIGINT, "
            "seed BIGINT, success BOOLEAN, progress DOUBLE, steps BIGINT, wall_time_s DOUBLE, "
            "error VARCHAR, factors VARCHAR)"
        )
    con.execute("CREATE VIEW episodes AS SELECT * FROM _episodes")


@contextmanager
def open_index(root: str | Path) -> Iterator[tuple[Any, list[RunEntry]]]:
    """A DuckDB connection with the views `runs` and `episodes` over the runs under
    `root`, no longer able to touch files (module doc), and the runs found."""
    import duckdb

    entries = find_runs(root)
    with tempfile.TemporaryDirectory(prefix="metasim-runs-") as tmp:
        cap = f"{memory_limit()}B"
        config: dict[str, Any] = {"temp_directory": tmp, "memory_limit": cap}
        config["max_temp_directory_size"] = cap
        con = duckdb.connect(":memory:", config=config)
        try:
            _create_runs(con, [describe(e) for e in entries])
            try:
                _create_episodes(con, entries)
            except duckdb.Error as exc:
                raise MetasimInputError(
                    str(root), [f"cannot read the runs' episodes.parquet ({one_line(str(exc))})"]
                ) from None
            con.execute("SET enable_external_access = false")
            con.execute("SET lock_configuration = true")
            yield con, entries
        finally:
            con.close()


def run_sql(
    root: str | Path, sql: str, out: IO[str], warn: Callable[[str], object] | None = None
) -> int:
    """Run `sql` over the runs under `root`, writing the result as CSV (header first) to
    `out`; return the number of rows. Bad SQL is an input error naming --sql. A damaged
    run (its status says why) is queried as it is: a refused episodes.parquet (a
    duplicated episode, a column of the wrong type) is left out of `episodes`, and
    `warn` is told of each such run, so one damaged run among many neither stops the
    query nor counts silently."""
    import duckdb

    with open_index(root) as (con, entries):
        for e in entries:
            if e.problems and warn is not None:
                left_out = e.parquet.is_file() and not e.queryable
                tail = "; its episodes are left out of the episodes view" if left_out else ""
                warn(f"{e.path}: damaged: {'; '.join(e.problems)}{tail}")
        try:
            statements = con.extract_statements(sql)
            if len(statements) != 1:
                raise MetasimInputError(
                    "--sql",
                    [f"expected exactly one SQL statement, got {len(statements)}"],
                    "Run each statement with its own --sql",
                )
            cur = con.execute(sql)
        except duckdb.OutOfMemoryException as exc:
            raise MetasimInputError(
                "--sql",
                [f"the query needs more than {memory_limit()} bytes ({MEMORY}): "
                 f"{(str(exc).splitlines() or [''])[0].rstrip('.')}"],
                f"Narrow the query, or raise {MEMORY}=<bytes> if this machine has the memory",
            ) from None  # fmt: skip
        except duckdb.Error as exc:
            raise MetasimInputError("--sql", [one_line(str(exc))], _HINT) from None
        if cur.description is None:
            raise MetasimInputError("--sql", ["the statement returns no rows"], _HINT)
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([d[0] for d in cur.description])
        count = 0
        while batch := cur.fetchmany(FETCH):
            writer.writerows([_cell(v) for v in row] for row in batch)
            count += len(batch)
        return count


_HINT = "Views: runs (one row per run folder) and episodes (every run's episodes.parquet)"


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, list | dict):
        return json.dumps(value, default=str)
    return value
