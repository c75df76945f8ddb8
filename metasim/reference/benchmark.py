"""A benchmark, declared once: the `Benchmark` entry each benchmark plug-in registers.

What a plug-in brings is spread over registries (its task source, kinds, policies, verbs);
the entry says which of them make up the benchmark and what metasim claims for it, so that
common verbs (`metasim check ... --benchmark NAME`) and one contract test over every
registered benchmark (tests/test_benchmark_contract.py) follow from it instead of being
written again per benchmark:

- `source`: the prefix of its task source (its suites come from there, and only there);
- `expert`: the policy kind of its scripted expert;
- `presets`: the policy presets (policies/<name>.yaml) its checkpoints are evaluated with;
- `backends`: the backends docs/support_matrix.md claims for its tasks;
- `checks`: each reference check (parity, modeldiff, xcheck) as the argv of the plug-in's
  own verb that runs it;
- `reference`: a function that starts its reference simulator's worker, asks it one
  question and closes it, returning what it answered (its versions), or None when the
  benchmark has no reference simulator; `reference_ready` whether that can run here
  (the reference venv exists or can be built) with the reason when not.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from metasim.errors import MetasimInputError
from metasim.registry import Registry, UnknownName

CHECKS = ("parity", "modeldiff", "xcheck")


@dataclass(frozen=True)
class Benchmark:
    """One benchmark plug-in's declaration (see the module doc)."""

    name: str
    source: str
    expert: str
    presets: tuple[str, ...] = ()
    backends: tuple[str, ...] = ("mujoco",)
    checks: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    reference: Callable[[], dict[str, Any]] | None = None
    reference_ready: Callable[[], str | None] | None = None

    def suites(self) -> dict[str, list[str]]:
        """Its suites, from its task source ({} when the benchmark's extra is missing)."""
        from metasim.scene.sources import SOURCES

        return SOURCES[self.source].suites()


BENCHMARKS: Registry[Benchmark] = Registry("benchmark")


def register_benchmark(entry: Benchmark) -> Benchmark:
    """Register `entry` under its name (a plug-in calls this from its package)."""
    unknown = set(entry.checks) - set(CHECKS)
    if unknown:
        raise ValueError(f"benchmark {entry.name!r}: unknown checks {sorted(unknown)}")
    return BENCHMARKS.register(entry.name, entry)


def benchmark(name: str, flag: str = "--benchmark") -> Benchmark:
    """The registered benchmark `name`; an input error naming `flag` and the known ones."""
    try:
        return BENCHMARKS[name]
    except UnknownName:
        known = ", ".join(BENCHMARKS.names()) or "none (no benchmark plug-in installed)"
        raise MetasimInputError(flag, [f"no benchmark {name!r}; known: {known}"]) from None


def check_argv(name: str, check: str) -> tuple[str, ...]:
    """The argv of the plug-in verb that runs `check` for benchmark `name`."""
    entry = benchmark(name)
    argv = entry.checks.get(check)
    if argv is None:
        has = ", ".join(entry.checks) or "none"
        raise MetasimInputError(
            "metasim check", [f"benchmark {name!r} has no {check} check; it has: {has}"]
        )
    return argv


__all__ = ["BENCHMARKS", "CHECKS", "Benchmark", "benchmark", "check_argv", "register_benchmark"]
