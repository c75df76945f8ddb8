"""Recover a run store that DuckDB cannot read (truncated, emptied, corrupted pages).

Nothing the user has is deleted: the damaged `episodes.duckdb` (and its `.wal`) is moved
aside to `episodes.damaged-<time>.duckdb`, every episode that can still be read is
copied into a new `episodes.duckdb` (first from a scratch copy of the damaged file, row
group by row group, then whatever `episodes.parquet` holds that it lacks), and the user
is told what survived and what to do: run the same command again, which runs only the
episodes the new store does not hold.
"""

from __future__ import annotations

import datetime as dt
import shutil
import tempfile
from pathlib import Path
from typing import Any

import duckdb

from metasim.errors import MetasimInputError, one_line
from metasim.evaluate.table import COLUMNS, TABLE, create_table
from metasim.guards import replacing

Row = tuple[Any, ...]  # the store's columns, in metasim.evaluate.table.COLUMNS order
ROW_GROUP = 122_880  # DuckDB's rows per row group: the unit a damaged block takes with it


def salvage(path: Path, exc: Exception) -> MetasimInputError:
    """Move the damaged store at `path` aside, rebuild it from what survives, and return
    the error that tells the user (the caller raises it)."""
    columns = list(COLUMNS)
    aside = _move_aside(path)
    from_db = read_damaged(aside, columns)
    from_parquet = read_parquet(path.parent / "episodes.parquet", columns)
    rows = {_key(r, columns): r for r in from_parquet}
    rows.update({_key(r, columns): r for r in from_db})
    write_store(path, list(rows.values()), columns)
    extra = len(rows) - len(from_db)
    survived = (
        f"recovered {len(rows)} episodes into a new {path.name} ({len(from_db)} still "
        f"readable in the damaged store, {extra} more from episodes.parquet)"
        if rows
        else f"no episode could be recovered (no readable rows, no episodes.parquet); "
        f"a new empty {path.name} is in its place"
    )
    reason = one_line(str(exc))[:300]
    return MetasimInputError(
        str(path.parent),
        [
            f"the run folder's store {path.name} is damaged ({reason}); it was moved to "
            f"{aside.name} (nothing was deleted) and {survived}"
        ],
        "Run the same command again to resume: it runs only the episodes the new store "
        "does not hold. Keep the damaged file until you have checked the results",
    )


def _move_aside(path: Path) -> Path:
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    aside = path.with_name(f"{path.stem}.damaged-{stamp}{path.suffix}")
    n = 1
    while aside.exists():
        aside = path.with_name(f"{path.stem}.damaged-{stamp}-{n}{path.suffix}")
        n += 1
    path.rename(aside)
    wal = path.with_name(path.name + ".wal")
    if wal.exists():
        wal.rename(aside.with_name(aside.name + ".wal"))
    return aside


def read_damaged(aside: Path, columns: list[str]) -> list[Row]:
    """Every row DuckDB can still read from the damaged store, read from a scratch copy
    (so the file the user keeps is never written): the whole table if it reads, else
    each row group that reads."""
    with tempfile.TemporaryDirectory(prefix="metasim-salvage-") as scratch:
        copy = Path(scratch) / "store.duckdb"
        shutil.copyfile(aside, copy)
        wal = aside.with_name(aside.name + ".wal")
        if wal.exists():
            shutil.copyfile(wal, copy.with_name(copy.name + ".wal"))
        try:
            con = duckdb.connect(str(copy))
        except duckdb.Error:
            return []
        try:
            return _read_rows(con, columns)
        finally:
            con.close()


def _read_rows(con: duckdb.DuckDBPyConnection, columns: list[str]) -> list[Row]:
    select = f"SELECT {', '.join(columns)} FROM episodes"
    try:
        return [tuple(r) for r in con.execute(select).fetchall()]
    except duckdb.Error:
        pass
    try:
        last = con.execute("SELECT max(rowid) FROM episodes").fetchone()
    except duckdb.Error:
        return []
    if last is None or last[0] is None:
        return []
    rows: list[Row] = []
    for start in range(0, int(last[0]) + 1, ROW_GROUP):
        try:
            part = con.execute(
                f"{select} WHERE rowid >= ? AND rowid < ?", [start, start + ROW_GROUP]
            ).fetchall()
        except duckdb.Error:
            continue
        rows += [tuple(r) for r in part]
    return rows


def read_parquet(path: Path, columns: list[str]) -> list[Row]:
    """The rows of episodes.parquet (written when a run completes), or none."""
    if not path.is_file():
        return []
    con = duckdb.connect()
    try:
        query = f"SELECT {', '.join(columns)} FROM read_parquet(?)"
        return [tuple(r) for r in con.execute(query, [str(path)]).fetchall()]
    except duckdb.Error:
        return []
    finally:
        con.close()


def write_store(path: Path, rows: list[Row], columns: list[str]) -> None:
    """A new store at `path` holding `rows`, built beside it and renamed into place
    (`metasim.guards.replacing`), so a half-built store is never left at `path`."""
    with replacing(path) as tmp:
        tmp.unlink()  # DuckDB makes its own file (an empty one is no database)
        con = duckdb.connect(str(tmp))
        try:
            create_table(con)
            if rows:
                marks = ", ".join("?" * len(columns))
                con.executemany(
                    f"INSERT INTO {TABLE} ({', '.join(columns)}) VALUES ({marks})", rows
                )
            con.execute("CHECKPOINT")
        finally:
            con.close()


def _key(row: Row, columns: list[str]) -> tuple[str, str, int]:
    return (
        str(row[columns.index("task")]),
        str(row[columns.index("cell")]),
        int(row[columns.index("episode")]),
    )
