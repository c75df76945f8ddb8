"""The one registry idiom: built-in packages and plug-ins are imported on first read,
entries register with a decorator, clashes and unknown names are clear errors."""

from __future__ import annotations

from importlib.metadata import entry_points

import pytest

from metasim.registry import PLUGIN_GROUP, Registry, UnknownName


def test_decorator_and_direct_registration_and_lookup():
    reg: Registry[object] = Registry("widget")

    @reg.register("a")
    def a() -> int:
        return 1

    reg.register("b", 2)
    assert reg["a"] is a and reg["b"] == 2 and reg.names() == ["a", "b"] and "a" in reg
    with pytest.raises(UnknownName, match=r"unknown widget 'c'; expected one of \['a', 'b'\]"):
        reg["c"]
    reg.unregister("b")
    assert reg.get("b") is None


def test_two_definitions_of_one_name_clash():
    reg: Registry[object] = Registry("widget")

    def one() -> None: ...

    reg.register("x", one)
    reg.register("x", one)  # the same definition again (a module re-imported): fine

    def two() -> None: ...

    with pytest.raises(ValueError, match="widget 'x' registered twice"):
        reg.register("x", two)


def test_first_read_imports_every_module_of_the_builtin_packages():
    import sys

    sys.modules.pop("metasim.bench.render", None)
    reg: Registry[object] = Registry("thing", packages=("metasim.bench",))
    reg.names()
    assert "metasim.bench.render" in sys.modules


def test_the_libero_benchmark_is_declared_as_a_plugin():
    assert "metasim.libero" in {ep.value for ep in entry_points(group=PLUGIN_GROUP)}


def test_listeners_hear_entries_registered_later():
    reg: Registry[int] = Registry("number")
    reg.register("one", 1)
    heard: list[tuple[str, int]] = []
    reg.on_register(lambda name, value: heard.append((name, value)))
    reg.register("two", 2)
    assert heard == [("two", 2)]
