"""Fixtures of the LIBERO tests: the reference simulator (robosuite 1.4 + LIBERO on
MuJoCo 3.17 in .cache/libero-ref, built on first use; the tests that need it skip only
when it cannot be built, e.g. with no package index reachable)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from metasim.libero.reference.simulator import ReferenceSim, RefSimError, ensure_venv
from tests.lanes import needs


@pytest.fixture(scope="module")
@needs("reference")
def ref_python() -> Path:
    """The reference venv's python (built on first use)."""
    try:
        return ensure_venv()
    except RefSimError as exc:
        pytest.skip(f"cannot build the LIBERO reference venv (offline?): {exc}")


@pytest.fixture(scope="module")
@needs("reference")
def ref(ref_python: Path) -> Iterator[ReferenceSim]:
    """One reference worker process per test module."""
    with ReferenceSim(ref_python) as sim:
        yield sim
