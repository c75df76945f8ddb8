"""Helpers of the AST scans over metasim's modules (tests/test_atomic_writes.py,
tests/test_input_readers.py): a call's dotted name and the string constants of its
arguments."""

from __future__ import annotations

import ast


def dotted(node: ast.expr) -> str:
    """`a.b.c` for an attribute chain, the name for a name, `?` for anything else."""
    if isinstance(node, ast.Attribute):
        return f"{dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else "?"


def argument_text(call: ast.Call) -> str:
    """The string constants anywhere in `call`'s positional arguments, joined by spaces
    (an f-string's literal parts included): the SQL text of an `execute`/`sql` call."""
    return " ".join(
        n.value
        for a in call.args
        for n in ast.walk(a)
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    )
