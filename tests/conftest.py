from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from metasim.paths import SCENES
from tests import lanes

SCENE_FILES = sorted(SCENES.glob("*.yaml"))


@pytest.fixture(scope="session")
def lift_scene():
    from metasim.scene import compile_file

    return compile_file(str(SCENES / "lift_cube.yaml"))


def scene_ids() -> list[str]:
    return [p.stem for p in SCENE_FILES]


__all__ = ["SCENE_FILES", "Path", "scene_ids"]

GUARD = lanes.LaneGuard()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--shard",
        default=None,
        metavar="K/N",
        help="run every N-th selected test from the K-th (0-based): CI's bounded samples",
    )


def pytest_configure(config: pytest.Config) -> None:
    GUARD.install()


def pytest_unconfigure(config: pytest.Config) -> None:
    GUARD.uninstall()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every collected test in its lane (tests/lanes.py), then `--shard` after `-m`/`-k`."""
    problems = lanes.check_items(items)
    if problems:
        raise pytest.UsageError(
            "tests missing their lane marker (tests/lanes.py):\n  " + "\n  ".join(problems)
        )
    spec = config.getoption("--shard")
    if spec:
        items[:], dropped = lanes.shard(items, spec)
        config.hook.pytest_deselected(items=dropped)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("device") is not None:
        import importlib.util

        cuda = False
        if importlib.util.find_spec("torch") is not None:
            import torch

            cuda = torch.cuda.is_available()
        if not cuda:
            pytest.skip("needs a CUDA device (the `device` lane)")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A phase in which the lane guard refused a process fails, whatever the test did
    with the refusal (caught it, skipped as if a package were missing)."""
    report = yield
    hit = GUARD.hit(item)
    if hit is not None and report.outcome != "failed":
        report.outcome = "failed"
        report.longrepr = hit
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    GUARD.current = item
    try:
        return (yield)
    finally:
        GUARD.current = None


@pytest.fixture(autouse=True)
def _warp_arrays_as_on_cuda(request: pytest.FixtureRequest) -> Any:
    """Warp's CPU arrays convert to NumPy implicitly (`np.asarray(a)`); CUDA arrays raise
    TypeError and need `a.numpy()`. Tests run on the CPU device, so every test makes CPU
    arrays refuse as CUDA's do (`numpy()` itself still converts): a CUDA-only failure of
    that kind (found on an H200, bench/gpu.md) fails here first. Only where warp is
    installed."""
    import importlib.util
    import threading

    if importlib.util.find_spec("warp") is None:
        yield
        return

    import warp as wp

    array = wp.array
    allowed = threading.local()
    interface, numpy = array.__dict__["__array_interface__"], array.numpy

    def strict_interface(self: Any) -> Any:
        if self.device is not None and self.device.is_cpu and not getattr(allowed, "on", 0):
            raise AttributeError("__array_interface__")  # as a CUDA array has none
        return interface.__get__(self)

    def strict_array(self: Any) -> Any:
        if self.device is not None and self.device.is_cpu and getattr(allowed, "on", 0):
            raise AttributeError("__array__")  # numpy() converts through the interface

        def reject(dtype: Any = None, copy: Any = None) -> Any:
            raise TypeError(
                f"implicit NumPy conversion of a warp array (refused as on CUDA devices; "
                f"call .numpy()): device {self.device}"
            )

        return reject

    def explicit(self: Any, *args: Any, **kwargs: Any) -> Any:
        allowed.on = getattr(allowed, "on", 0) + 1
        try:
            return numpy(self, *args, **kwargs)
        finally:
            allowed.on -= 1

    mp = pytest.MonkeyPatch()
    mp.setattr(array, "__array_interface__", property(strict_interface))
    mp.setattr(array, "__array__", property(strict_array))
    mp.setattr(array, "numpy", explicit)
    try:
        yield
    finally:
        mp.undo()
