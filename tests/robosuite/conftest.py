"""Fixtures of the robosuite tests: robosuite itself in LIBERO's reference venv
(.cache/libero-ref, built on first use; the tests that need it skip only when it cannot be
built, e.g. with no package index reachable)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from metasim.robosuite.reference.simulator import RobosuiteRef, RobosuiteRefError, ensure_venv
from tests.lanes import needs


@pytest.fixture(scope="module")
@needs("reference")
def ref() -> Iterator[RobosuiteRef]:
    """One robosuite worker per test module (the reference venv built on first use)."""
    try:
        ensure_venv()
    except RobosuiteRefError as exc:
        pytest.skip(f"cannot build the robosuite reference venv (offline?): {exc}")
    with RobosuiteRef() as sim:
        yield sim
