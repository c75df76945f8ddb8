"""A parser for LIBERO's BDDL problem files (the 130 LIBERO tasks and LIBERO-PRO's variants).

A BDDL problem is one s-expression:

    (define (problem NAME) (:domain robosuite) (:language words ...)
      (:regions (REGION (:target T) (:ranges ((x0 y0 x1 y1) ...)) (:yaw_rotation ((lo hi)))
                        (:rgba (r g b a))) ...)
      (:fixtures a b - category ...) (:objects c d - category ...)
      (:obj_of_interest x y ...) (:init (Pred args) ...) (:goal (And (Pred args) ...)))

Facts follow LIBERO's own reader (`libero/libero/envs/bddl_utils.py` with `bddl`'s
tokenizer): everything is lower-cased and `;` starts a comment; a region's full name is
`<target>_<region>`; a category listed twice keeps its last list. `language` is the
`:language` text (what LIBERO's env reports as `language_instruction`); LIBERO's harnesses
tell a policy the sentence of the file name instead (`language.py`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from metasim.errors import MetasimInputError

SExpr = str | list["SExpr"]
GoalExpr = tuple[str, ...] | tuple[str, list["GoalExpr"]]


@dataclass(frozen=True)
class BddlRegion:
    """One region: `ranges` are (x0, y0, x1, y1) rectangles in the target's frame (for a
    table, relative to the workspace offset), `yaw_rotation` the (lo, hi) yaw range (rad)."""

    name: str
    target: str | None
    ranges: tuple[tuple[float, float, float, float], ...] = ()
    yaw_rotation: tuple[float, float] = (0.0, 0.0)
    rgba: tuple[float, float, float, float] = (0.0, 0.0, 1.0, 0.0)

    @property
    def full_name(self) -> str:
        """The name predicates use: `<target>_<region>`."""
        return f"{self.target}_{self.name}"


@dataclass(frozen=True)
class BddlProblem:
    """A parsed problem. `fixtures`/`objects`: category -> instance names (file order);
    `init`: atoms (predicate, args...); `goal`: the goal tree, atoms as tuples of strings,
    connectives as (name, [children])."""

    problem_name: str
    language: str
    regions: dict[str, BddlRegion]
    fixtures: dict[str, list[str]]
    objects: dict[str, list[str]]
    obj_of_interest: list[str]
    init: list[tuple[str, ...]]
    goal: GoalExpr
    scene_properties: dict[str, str] = field(default_factory=dict)

    def goal_atoms(self) -> list[tuple[str, ...]]:
        """Every atomic predicate of the goal, in order."""
        out: list[tuple[str, ...]] = []
        _atoms(self.goal, out)
        return out

    def category_of(self, name: str) -> str | None:
        """The category of a fixture or object instance, else None."""
        for group in (self.fixtures, self.objects):
            for cat, names in group.items():
                if name in names:
                    return cat
        return None


CONNECTIVES = ("and", "or", "not")


def _atoms(node: GoalExpr, out: list[tuple[str, ...]]) -> None:
    if node and node[0] in CONNECTIVES and len(node) == 2 and isinstance(node[1], list):
        for child in node[1]:
            _atoms(child, out)
    else:
        out.append(tuple(str(x) for x in node))


def tokenize(text: str) -> SExpr:
    """Text -> nested lists of lower-cased atoms (comments after `;` removed)."""
    text = re.sub(r";.*$", "", text, flags=re.MULTILINE).lower()
    stack: list[list[SExpr]] = [[]]
    for tok in re.findall(r"[()]|[^\s()]+", text):
        if tok == "(":
            stack.append([])
        elif tok == ")":
            if len(stack) == 1:
                raise ValueError("unbalanced ')'")
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(tok)
    if len(stack) != 1 or len(stack[0]) != 1:
        raise ValueError("unbalanced '(' or more than one top-level expression")
    return stack[0][0]


def parse_bddl(path: Path | str) -> BddlProblem:
    """Parse a BDDL problem file; malformed input raises MetasimInputError naming the file."""
    path = Path(path)
    try:
        return parse_bddl_text(path.read_text(encoding="utf-8"))
    except (ValueError, IndexError, TypeError) as exc:
        raise MetasimInputError(str(path), [f"not a LIBERO BDDL problem: {exc}"]) from None


def parse_bddl_text(text: str) -> BddlProblem:
    tree = tokenize(text)
    if not isinstance(tree, list) or not tree or tree[0] != "define":
        raise ValueError("expected '(define (problem ...) ...)'")
    parts: dict[str, list[SExpr]] = {}
    name = "unknown"
    for group in tree[1:]:
        if not isinstance(group, list) or not group or not isinstance(group[0], str):
            raise ValueError(f"unexpected element {group!r}")
        if group[0] == "problem":
            name = str(group[-1])
        else:
            parts[group[0]] = group[1:]
    if ":language" not in parts or not parts[":language"]:
        raise ValueError("no (:language ...) instruction")
    if ":goal" not in parts or len(parts[":goal"]) != 1:
        raise ValueError("expected exactly one goal expression in (:goal ...)")
    return BddlProblem(
        problem_name=name,
        language=" ".join(_words(parts[":language"])),
        regions=_regions(parts.get(":regions", [])),
        fixtures=_typed_list(parts.get(":fixtures", []), "fixture"),
        objects=_typed_list(parts.get(":objects", []), "object"),
        obj_of_interest=_words(parts.get(":obj_of_interest", [])),
        init=[_atom(a) for a in parts.get(":init", [])],
        goal=_goal(parts[":goal"][0]),
    )


def _words(items: list[SExpr]) -> list[str]:
    if not all(isinstance(x, str) for x in items):
        raise ValueError(f"expected plain words, got {items!r}")
    return [str(x) for x in items]


def _atom(item: SExpr) -> tuple[str, ...]:
    if not isinstance(item, list) or not item:
        raise ValueError(f"expected an atom '(predicate args...)', got {item!r}")
    return tuple(_words(item))


def _goal(item: SExpr) -> GoalExpr:
    if isinstance(item, list) and item and item[0] in CONNECTIVES:
        return (str(item[0]), [_goal(x) for x in item[1:]])
    return _atom(item)


def _typed_list(items: list[SExpr], default: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    pending: list[str] = []
    words = _words(items)
    i = 0
    while i < len(words):
        if words[i] == "-":
            if i + 1 >= len(words):
                raise ValueError("'-' without a category")
            out[words[i + 1]] = pending
            pending = []
            i += 2
        else:
            pending.append(words[i])
            i += 1
    if pending:
        out.setdefault(default, []).extend(pending)
    return out


def _floats(item: SExpr, n: int) -> tuple[float, ...]:
    if not isinstance(item, list) or len(item) != n:
        raise ValueError(f"expected {n} numbers, got {item!r}")
    return tuple(_number(x) for x in _words(item))


def _number(word: str) -> float:
    if word in ("pi", "np.pi"):
        return 3.141592653589793
    return float(word)


def _regions(items: list[SExpr]) -> dict[str, BddlRegion]:
    out: dict[str, BddlRegion] = {}
    for reg in items:
        if not isinstance(reg, list) or not reg or not isinstance(reg[0], str):
            raise ValueError(f"bad region {reg!r}")
        fields: dict[str, object] = {}
        for attr in reg[1:]:
            if not isinstance(attr, list) or not attr:
                raise ValueError(f"bad attribute in region {reg[0]!r}")
            key = attr[0]
            if key == ":target" and len(attr) == 2:
                fields["target"] = str(attr[1])
            elif key == ":ranges" and len(attr) == 2 and isinstance(attr[1], list):
                fields["ranges"] = tuple(_floats(r, 4) for r in attr[1])
            elif key == ":yaw_rotation" and len(attr) == 2 and isinstance(attr[1], list):
                fields["yaw_rotation"] = _floats(attr[1][-1], 2)
            elif key == ":rgba" and len(attr) == 2:
                fields["rgba"] = _floats(attr[1], 4)
            else:
                raise ValueError(f"region {reg[0]!r} has an unknown attribute {key!r}")
        region = BddlRegion(name=str(reg[0]), **fields)  # type: ignore[arg-type]
        out[region.full_name] = region
    return out
