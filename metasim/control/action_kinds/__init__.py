"""Action kinds, one registered class per kind (see `base`): `ee_delta` and `joint_pos`
(`position`), `osc_pose` (`osc_pose`), `mocap_delta` (`mocap`). A new kind is a module
here (or in a plug-in) with an `@register_action_kind("name")` class; see
docs/extending.md "Add an action kind"."""

from metasim.control.action_kinds.base import (
    ACTION_KINDS,
    ActionKindBase,
    KindOptions,
    MocapCommand,
    as_slice,
    register_action_kind,
)

__all__ = [
    "ACTION_KINDS",
    "ActionKindBase",
    "KindOptions",
    "MocapCommand",
    "as_slice",
    "register_action_kind",
]
