"""What a run folder holds, typed: one `EpisodeRecord` per episode, one `RunSummary`.

The runner writes both (episodes through the store into episodes.duckdb and
episodes.parquet, the summary into summary.json); `metasim report` and `metasim
correlate` load them back through the same types. `metasim schema summary` prints the
JSON Schema of summary.json.

A cell's factor values are a typed mapping here; the store alone encodes them (as JSON
text with sorted keys, the `factors` column) and decodes them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from metasim.errors import MetasimInputError, validation_problems
from metasim.guards import load_json, write_atomic


@dataclass(frozen=True)
class EpisodeRecord:
    """One finished episode (a row of episodes.parquet)."""

    task: str
    episode: int
    seed: int
    success: bool
    progress: float
    steps: int
    wall_time_s: float
    error: str | None
    cell: str = "nominal"
    factors: dict[str, Any] = field(default_factory=dict)  # the cell's factor values


def encode_factors(factors: dict[str, Any]) -> str:
    """The `factors` column of the store and of episodes.parquet."""
    return json.dumps(factors, sort_keys=True, default=str)


def decode_factors(text: str | None, where: str) -> dict[str, Any]:
    """`factors` column text back to the mapping (an input error if it is not one)."""
    try:
        value = json.loads(text or "{}")
    except json.JSONDecodeError as exc:
        raise MetasimInputError(where, [f"factors: not JSON ({exc})"]) from None
    if not isinstance(value, dict):
        raise MetasimInputError(where, [f"factors: expected an object, got {text!r}"])
    return value


Rate = Annotated[float, Field(ge=0, le=1)]


class TaskSummary(BaseModel):
    """One task's episodes (of a run, or of one cell): success rate with its 95% Wilson
    interval, mean progress and steps, errors. The runner fills every field; a summary
    written by another tool may carry `success_rate` and `n` only."""

    model_config = ConfigDict(extra="allow")
    success_rate: Rate
    n: Annotated[int, Field(ge=0)]
    successes: Annotated[int, Field(ge=0)] | None = None
    ci95: tuple[Rate, Rate] | None = None
    mean_progress: float | None = None
    mean_steps: float | None = None
    mean_steps_to_success: float | None = None
    errors: int = 0

    @property
    def k(self) -> int:
        """Successes (from the rate when the summary does not state them)."""
        return self.successes if self.successes is not None else round(self.success_rate * self.n)

    @property
    def interval(self) -> tuple[float, float]:
        """The stated 95% interval, else the Wilson interval of k/n."""
        if self.ci95 is not None:
            return self.ci95
        from metasim.stats import success_interval

        return success_interval(self.k, self.n)


class CellSummary(BaseModel):
    """One cell of the perturbation grid: its factor values and per-task summaries."""

    model_config = ConfigDict(extra="allow")
    factors: dict[str, Any] = Field(default_factory=dict)
    tasks: dict[str, TaskSummary] = Field(default_factory=dict)


class RunSummary(BaseModel):
    """summary.json of a `metasim eval` run folder.

    `aggregate`: mean/median/IQM/optimality gap of the per-task rates with bootstrap
    intervals; `sensitivity`, `sensitivity_by_task`, `variance_shares` (a factorial grid
    only): present when the run had a perturbation grid; `adaptive`: present when the
    run used the adaptive stopping rule.
    """

    model_config = ConfigDict(extra="allow")
    tasks: dict[str, TaskSummary]
    cells: dict[str, CellSummary] = Field(default_factory=dict)
    aggregate: dict[str, Any] = Field(default_factory=dict)
    sensitivity: dict[str, Any] | None = None
    sensitivity_by_task: dict[str, Any] | None = None
    variance_shares: dict[str, Any] | None = None
    adaptive: dict[str, Any] | None = None
    # render=warp on a benchmark whose reference images are OpenGL's: what differs
    image_inputs: dict[str, str] | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    versions: dict[str, str] = Field(default_factory=dict)
    wall_time_s: float | None = None
    run_dir: str | None = None

    OPTIONAL: ClassVar[tuple[str, ...]] = (
        "sensitivity",
        "sensitivity_by_task",
        "variance_shares",
        "adaptive",
        "image_inputs",
    )

    def to_json(self) -> str:
        """The summary.json text (sections a run did not have are left out)."""
        data = self.model_dump()
        for key in (*self.OPTIONAL, "wall_time_s", "run_dir"):
            if data.get(key) is None:
                data.pop(key, None)
        return json.dumps(data, indent=2, default=str) + "\n"

    def write(self, run_dir: Path) -> Path:
        """Write RUN_DIR/summary.json atomically (`metasim.guards.write_atomic`)."""
        path = run_dir / "summary.json"
        write_atomic(path, self.to_json())
        return path

    @classmethod
    def load(cls, run_dir: Path) -> RunSummary:
        """RUN_DIR/summary.json; a missing, unreadable or malformed one is an input error
        naming the file and the field."""
        path = run_dir / "summary.json"
        if not path.is_file():
            raise MetasimInputError(
                str(run_dir),
                ["not a run folder: summary.json is missing (run `metasim eval out=...` first)"],
            )
        data = load_json(path, "summary.json")  # size and nesting bounded
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise MetasimInputError(str(path), validation_problems(exc)) from None

    @property
    def policy_name(self) -> str | None:
        """The policy of the run: config.policy.name, else config.policy.kind."""
        policy = self.config.get("policy")
        if not isinstance(policy, dict):
            return None
        name = policy.get("name") or policy.get("kind")
        return str(name) if name else None
