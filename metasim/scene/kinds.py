"""Open kinds: the predicate and fixture kinds a scene YAML may use, each registered by the
module that defines its model (`@PREDICATE_KINDS.register("lifted")`), the core's and a
benchmark package's alike, so a benchmark adds kinds without editing scene/.

The scene schema's discriminated unions (`Predicate`, `FixtureSpec`) are made from these
registries when pydantic first builds a model that holds one (those models are
`defer_build`): the registries are read then, which imports the plug-ins, so scene/ never
imports a plug-in at import time. A kind registered (or removed) after that rebuilds every
model that holds a union: the registered kinds themselves and the models marked with
`holds_kinds` (the task, the scene).

Kinds keep their registration order (the core's in definition order, then the plug-ins'):
it is the order of the kinds in error messages and in the JSON Schema.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Annotated, Any, Generic, TypeVar, overload

from pydantic import BaseModel, Discriminator, Field, GetCoreSchemaHandler, Tag
from pydantic_core import CoreSchema

from metasim.registry import Registry, load_plugins
from metasim.scene.predicate_base import PredicateBase
from metasim.scene.schema_base import FixtureBase

T = TypeVar("T")
M = TypeVar("M", bound=type[BaseModel])
_SCHEMA_ATTRS = ("__pydantic_core_schema__", "__pydantic_validator__", "__pydantic_serializer__")


class OrderedRegistry(Registry[T]):
    """A `Registry` whose entries keep their registration order (`in_order`): the
    built-ins in definition order, then the plug-ins'."""

    def in_order(self) -> list[tuple[str, T]]:
        """(name, entry) in registration order (the built-ins and the plug-ins imported)."""
        self.load()
        return list(self._entries.items())


class KindRegistry(OrderedRegistry[T]):
    """The kinds of one schema union: once a schema was made from them, an entry that
    comes or goes rebuilds the models holding kind unions."""

    @overload
    def register(self, name: str) -> Callable[[T], T]: ...

    @overload
    def register(self, name: str, entry: T) -> T: ...

    def register(self, name: str, entry: T | None = None) -> T | Callable[[T], T]:
        def add(value: T) -> T:
            super(KindRegistry, self).register(name, value)
            _rebuild_if_built()
            return value

        return add if entry is None else add(entry)

    def unregister(self, name: str) -> None:
        super().unregister(name)
        _rebuild_if_built()


PREDICATE_KINDS: KindRegistry[type[PredicateBase]] = KindRegistry(
    "predicate kind", packages=("metasim.scene.task_schema",)
)
FIXTURE_KINDS: KindRegistry[type[FixtureBase]] = KindRegistry(
    "fixture kind", packages=("metasim.scene.schema",)
)

_HOLDERS: list[type[BaseModel]] = []
_built = False  # whether a union was made (then a change of kinds rebuilds the models)


def holds_kinds(cls: M) -> M:
    """Mark a model (`defer_build`) that holds a kind union other than through a kind:
    a kind registered later rebuilds it."""
    _HOLDERS.append(cls)
    return cls


def predicate_name(cls: type[BaseModel]) -> str:
    """The key of a predicate kind in YAML: its one field's alias, else its name."""
    name, field = next(iter(cls.model_fields.items()))
    return field.alias or name


def fixture_name(cls: type[BaseModel]) -> str:
    """The `type` of a fixture kind in YAML: the one value of its `type` Literal."""
    field = cls.model_fields.get("type")
    args = typing.get_args(field.annotation) if field is not None else ()
    if len(args) != 1 or not isinstance(args[0], str):
        raise TypeError(f"fixture kind {cls.__qualname__} needs a field `type: Literal['<kind>']`")
    return args[0]


def _checked(registry: KindRegistry[Any]) -> list[tuple[str, type[BaseModel]]]:
    """The registry's kinds, each checked to be keyed in YAML by its registered name."""
    key = predicate_name if registry is PREDICATE_KINDS else fixture_name
    kinds = registry.in_order()
    for name, cls in kinds:
        if key(cls) != name:
            raise TypeError(
                f"{registry.what} {name!r} ({cls.__module__}.{cls.__qualname__}) is keyed "
                f"{key(cls)!r} in YAML; register it under that name"
            )
    return kinds


def _predicate_tag(value: Any) -> str | None:
    """The kind of a predicate: a mapping's one key, or the registered name of a model."""
    if isinstance(value, dict) and len(value) == 1:
        key = next(iter(value))
        return key if key in PREDICATE_KINDS else None
    if isinstance(value, BaseModel):
        return predicate_name(type(value))
    return None


def predicate_union() -> Any:
    """The typing union of the registered predicate kinds, tagged by their key."""
    kinds = _checked(PREDICATE_KINDS)
    members = tuple(Annotated[cls, Tag(name)] for name, cls in kinds)
    message = "a predicate is a mapping with exactly one key, one of: " + ", ".join(
        name for name, _ in kinds
    )
    discriminator = Discriminator(
        _predicate_tag,
        custom_error_type="predicate",
        custom_error_message=message,
        custom_error_context={},
    )
    return Annotated[typing.Union[members], Field(discriminator=discriminator)]  # noqa: UP007


def fixture_union() -> Any:
    """The typing union of the registered fixture kinds, told apart by `type`."""
    members = tuple(cls for _, cls in _checked(FIXTURE_KINDS))
    return Annotated[typing.Union[members], Field(discriminator="type")]  # noqa: UP007


class KindUnion(Generic[T]):
    """Annotation metadata that stands for a kind union (`Annotated[Base, KindUnion(f)]`,
    `f` one of `predicate_union`, `fixture_union`): pydantic's schema of the field is
    the union's, made from the registries when the model is built."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make

    def union(self) -> Any:
        """The union as a typing type (what error messages walk)."""
        _load_kinds()
        return self.make()

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        global _built
        union = self.union()
        _built = True
        return handler.generate_schema(union)


def _load_kinds() -> None:
    """Import the built-in kinds and the plug-ins before any union is made."""
    load_plugins()
    PREDICATE_KINDS.load()
    FIXTURE_KINDS.load()


def _rebuild_if_built() -> None:
    """Rebuild every model holding a union, once a union was made: all are first marked
    unbuilt, so no rebuild reuses another's stale schema."""
    if not _built:
        return
    models = [
        *(cls for _, cls in PREDICATE_KINDS.in_order()),
        *(cls for _, cls in FIXTURE_KINDS.in_order()),
        *_HOLDERS,
    ]
    for cls in models:
        if cls.__pydantic_complete__:
            for attr in _SCHEMA_ATTRS:
                if attr in cls.__dict__:
                    delattr(cls, attr)
            cls.__pydantic_complete__ = False
    for cls in models:
        cls.model_rebuild(force=True)
