"""Checks of the Meta-World import against the package: model fields, parity, success."""
