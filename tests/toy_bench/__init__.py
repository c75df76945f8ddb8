"""A toy benchmark defined outside the package, as a third party would write one: its
task source (`toy:`) is registered by importing `tests.toy_bench.source`. Tests that use
it take the `toy_source` fixture (tests/toy_bench/conftest.py), which unregisters it after."""
