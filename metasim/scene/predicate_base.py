"""What every predicate kind of the scene schema declares (its sub-predicates and the
names it refers to), shared by the core kinds and those of benchmark packages."""

from __future__ import annotations

from typing import Literal, NamedTuple

from pydantic import ConfigDict

from metasim.scene.schema_base import Strict


class Ref(NamedTuple):
    """A name a predicate refers to: where (under the predicate), which of the scene's
    name sets it must be in (`object`, `body`, `joint`), how the message calls it."""

    loc: tuple[int | str, ...]
    among: Literal["object", "body", "joint"]
    label: str
    name: str


class PredicateBase(Strict):
    """What every predicate kind declares: its sub-predicates (with their place) and the
    names it refers to; reference checks and walks iterate these. A kind registers its
    model with `@PREDICATE_KINDS.register(<its one key>)` (metasim.scene.kinds) and its
    evaluator with `@predicate(<model>)` (metasim.tasks.predicates). Built when first used
    (a kind may hold predicates, whose union is made from the registry then)."""

    model_config = ConfigDict(defer_build=True)

    def children(self) -> list[tuple[tuple[int | str, ...], PredicateBase]]:
        return []

    def references(self) -> list[Ref]:
        return []

    def uses_contacts(self) -> bool:
        """Whether this kind itself tests touching (reads `TaskView.contacts`)."""
        return False
