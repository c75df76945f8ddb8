"""A BDDL goal -> metasim's predicate tree (a dict the scene schema validates).

Names in the imported scene (see `metasim.libero.importer.scene`): an object or fixture instance is
the body `<instance>`; a region is the site `<target>_<region>` (LIBERO's own site name);
a model's joints keep LIBERO's names `<instance>_<joint>`. Atoms map as LIBERO evaluates
them (libero/libero/envs/object_states/base_object_states.py):

| BDDL | metasim |
|---|---|
| (On A B), B an object/fixture | `resting_on` A on B |
| (On A R), R a region | `site_on` A over site R, touching R's fixture (not the workspace table) |
| (In A R) | `site_in` A inside site R |
| (Open X), (Close X) | any / all of X's joints past the category's threshold |
| (TurnOn X), (TurnOff X) | any / all of X's joints past the category's threshold |

X is a fixture (all its joints) or a region (the joints of the part holding its site).
"""

from __future__ import annotations

from typing import Any

from metasim.errors import MetasimInputError
from metasim.libero.importer.assets import WORKSPACES, object_model
from metasim.libero.importer.bddl import BddlProblem, GoalExpr

Bound = tuple[str, float, bool]  # ("above" | "below", value, inclusive)

# Thresholds per articulated category, from libero/libero/envs/objects/articulated_objects.py
# (open/close/turnon/turnoff of one joint position).
ARTICULATION: dict[str, dict[str, Bound]] = {
    "microwave": {"open": ("below", -1.3, False), "close": ("above", -0.005, False)},
    "short_cabinet": {"open": ("above", 0.10, False), "close": ("below", 0.0, False)},
    "short_fridge": {"open": ("above", 2.0, False), "close": ("below", 0.0, False)},
    **{
        c: {"open": ("below", -0.14, False), "close": ("above", 0.0, False)}
        for c in ("wooden_cabinet", "yellow_cabinet", "white_cabinet")
    },
    **{
        c: {"turnon": ("above", 0.5, True), "turnoff": ("below", 0.0, False)}
        for c in ("flat_stove", "yellow_stove")
    },
}
_ANY_OF = {"open": True, "turnon": True, "close": False, "turnoff": False}
_CONNECTIVE = {"and": "all", "or": "any"}


def compile_goal(problem: BddlProblem, source: str = "libero") -> dict[str, Any]:
    """The goal as a predicate tree; an input error names an atom metasim cannot state."""
    return _node(problem, problem.goal, source)


def _node(p: BddlProblem, node: GoalExpr, source: str) -> dict[str, Any]:
    head = node[0]
    if head in _CONNECTIVE and len(node) == 2 and isinstance(node[1], list):
        return {_CONNECTIVE[head]: [_node(p, c, source) for c in node[1]]}
    if head == "not" and len(node) == 2 and isinstance(node[1], list) and len(node[1]) == 1:
        return {"not": _node(p, node[1][0], source)}
    atom = tuple(str(x) for x in node)
    try:
        return _atom(p, atom)
    except KeyError as exc:
        raise MetasimInputError(source, [f"goal atom {' '.join(atom)!r}: {exc.args[0]}"]) from None


def _atom(p: BddlProblem, atom: tuple[str, ...]) -> dict[str, Any]:
    kind, args = atom[0], atom[1:]
    if kind in ("on", "in") and len(args) == 2:
        obj, target = args
        _instance(p, obj)
        if target in p.regions:
            if kind == "in":
                return {"site_in": {"object": obj, "site": target}}
            parent = p.regions[target].target
            touch = parent if parent and p.category_of(parent) not in WORKSPACES else None
            return {"site_on": {"object": obj, "site": target, "contact": touch}}
        if kind == "on":
            _instance(p, target)
            return {"resting_on": {"object": obj, "support": target}}
        raise KeyError(f"In needs a region as its second argument, got {target!r}")
    if kind in _ANY_OF and len(args) == 1:
        return _articulation(p, kind, args[0])
    raise KeyError(f"unknown predicate {kind!r} with {len(args)} argument(s)")


def _instance(p: BddlProblem, name: str) -> str:
    category = p.category_of(name)
    if category is None:
        raise KeyError(f"{name!r} is neither an object nor a fixture of the problem")
    return category


def _articulation(p: BddlProblem, kind: str, name: str) -> dict[str, Any]:
    if name in p.regions:
        owner = p.regions[name].target or ""
        category = _instance(p, owner)
        site = name[len(owner) + 1 :]
        joints = object_model(category).site_joints(site)
    else:
        owner, category = name, _instance(p, name)
        joints = tuple(j.name for j in object_model(category).joints)
    bound = ARTICULATION.get(category, {}).get(kind)
    if bound is None:
        raise KeyError(f"LIBERO defines no {kind!r} for the category {category!r}")
    if not joints:
        raise KeyError(f"{name!r} has no joints to test")
    side, value, inclusive = bound
    parts = [
        {"joint_value": {"joint": f"{owner}_{j}", side: value, "inclusive": inclusive}}
        for j in joints
    ]
    return {"any" if _ANY_OF[kind] else "all": parts}
