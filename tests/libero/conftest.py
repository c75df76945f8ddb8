"""Fixtures of the LIBERO tests: the reference simulator (robosuite 1.4 + LIBERO on
MuJoCo 3.17 in .cache/libero-ref, built on first use; the tests that need it skip only
when it cannot be built, e.g. with no package index reachable)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from metasim.libero.reference import ReferenceSim, RefSimError, ensure_venv


@pytest.fixture(scope="module")
def ref() -> Iterator[ReferenceSim]:
    """One reference worker process per test module."""
    try:
        python = ensure_venv()
    except RefSimError as exc:
        pytest.skip(f"cannot build the LIBERO reference venv (offline?): {exc}")
    with ReferenceSim(python) as sim:
        yield sim
