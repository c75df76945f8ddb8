"""The episodes table of a run's store: its name, columns and DDL.

Shared by the store (`metasim.evaluate.store`) and the recovery of a damaged store
(`metasim.evaluate.salvage`), which both build the table; neither imports the other.
"""

from __future__ import annotations

import duckdb

TABLE = "episodes"
COLUMNS = {
    "task": "VARCHAR NOT NULL",
    "cell": "VARCHAR NOT NULL",
    "episode": "BIGINT NOT NULL",
    "seed": "BIGINT NOT NULL",
    "success": "BOOLEAN NOT NULL",
    "progress": "DOUBLE NOT NULL",
    "steps": "BIGINT NOT NULL",
    "wall_time_s": "DOUBLE NOT NULL",
    "error": "VARCHAR",
    "factors": "VARCHAR NOT NULL",
}


def create_table(con: duckdb.DuckDBPyConnection) -> None:
    """The episodes table, keyed by (task, cell, episode), if it is not there yet."""
    cols = ", ".join(f"{k} {v}" for k, v in COLUMNS.items())
    con.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} ({cols}, PRIMARY KEY (task, cell, episode))")
