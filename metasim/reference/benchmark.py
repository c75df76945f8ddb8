"""A benchmark, declared once: the `Benchmark` entry each benchmark plug-in registers.

What a plug-in brings is spread over registries (its task source, kinds, policies, verbs);
the entry says which of them make up the benchmark and what metasim claims for it, so that
common verbs (`metasim check ... --benchmark NAME`) and one contract test over every
registered benchmark (tests/test_benchmark_contract.py) follow from it instead of being
written again per benchmark:

- `source`: the prefix of its task source (its suites come from there, and only there);
  by default "<name>:";
- `expert`: the policy kind of its scripted expert; by default "<name>_expert";
- `presets`: the policy presets (policies/<name>.yaml) its checkpoints are evaluated with;
- `backends`: the backends docs/support_matrix.md claims for its tasks;
- `checks`: each reference check (parity, modeldiff, xcheck) as the argv of the plug-in's
  own verb that runs it; `own_checks` names those run as `metasim <name> <check>`;
- `reference`: "module:function" that starts its reference simulator's worker, asks it
  one question and closes it, returning what it answered (its versions); None when the
  benchmark has no reference simulator. `venv`: "module:function" that returns the
  reference venv's python, building the venv first if needed. Named by string, so a
  plug-in's import stays light (nothing imported until a check asks).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from metasim.errors import MetasimInputError
from metasim.registry import Registry, UnknownName

CHECKS = ("parity", "modeldiff", "xcheck")


@dataclass(frozen=True)
class Benchmark:
    """One benchmark plug-in's declaration (see the module doc)."""

    name: str
    presets: tuple[str, ...] = ()
    backends: tuple[str, ...] = ("mujoco",)
    own_checks: tuple[str, ...] = ()
    checks: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    reference: str | None = None
    venv: str | None = None
    source: str = ""
    expert: str = ""

    def __post_init__(self) -> None:
        # The conventions the module doc names, filled in where the plug-in is silent.
        if not self.source:
            object.__setattr__(self, "source", f"{self.name}:")
        if not self.expert:
            object.__setattr__(self, "expert", f"{self.name}_expert")
        own = {check: (self.name, check) for check in self.own_checks}
        object.__setattr__(self, "checks", {**own, **self.checks})

    def reference_ready(self) -> str | None:
        """None when the reference venv is there or was just built; else why it cannot
        be built here (the build's own error)."""
        if self.venv is None:
            return None
        try:
            _call(self.venv)
        except Exception as exc:  # whatever the installer raised: the reason to show
            return f"the {self.name} reference venv cannot be built here: {exc}"
        return None

    def probe_reference(self) -> dict[str, Any]:
        """Start the reference worker, ask it one question, close it: its answer."""
        if self.reference is None:
            raise ValueError(f"benchmark {self.name!r} has no reference simulator")
        return dict(_call(self.reference))

    def suites(self) -> dict[str, list[str]]:
        """Its suites, from its task source ({} when the benchmark's extra is missing)."""
        from metasim.scene.sources import SOURCES

        return SOURCES[self.source].suites()


def _call(target: str) -> Any:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)()


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
