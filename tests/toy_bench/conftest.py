from __future__ import annotations

from collections.abc import Iterator

import pytest

from metasim.scene.sources import SOURCES


@pytest.fixture
def toy_source() -> Iterator[str]:
    """The toy benchmark's `toy:` source registered for one test; its prefix."""
    from tests.toy_bench import source

    SOURCES.register(source.PREFIX, source.ToySource())
    yield source.PREFIX
    SOURCES.unregister(source.PREFIX)
