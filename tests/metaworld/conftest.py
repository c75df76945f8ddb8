"""Fixtures of the Meta-World tests: the reference (metaworld 3.1.1 on MuJoCo 3.3.0 in
.cache/metaworld-ref, built from PyPI on first use, about a minute; the tests that need it
skip only when it cannot be built, e.g. with no package index reachable)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from metasim.metaworld.reference.simulator import MetaWorldRef, MetaWorldRefError, ensure_venv
from tests.lanes import needs


@pytest.fixture(scope="module")
@needs("reference")
def mw_python() -> Path:
    """The reference venv's python (built on first use)."""
    try:
        return ensure_venv()
    except MetaWorldRefError as exc:
        pytest.skip(f"cannot build the Meta-World reference venv (offline?): {exc}")


@pytest.fixture(scope="module")
@needs("reference")
def mw_ref(mw_python: Path) -> Iterator[MetaWorldRef]:
    """One reference worker process per test module."""
    with MetaWorldRef(mw_python) as ref:
        yield ref
