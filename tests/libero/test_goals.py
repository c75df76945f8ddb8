"""Every LIBERO goal compiles into a schema-valid predicate tree, atom by atom as LIBERO
evaluates it."""

from __future__ import annotations

import pytest

from metasim.errors import MetasimInputError
from metasim.libero.importer import bddl, goals, paths
from metasim.scene.schema import TaskSpec


def test_all_130_goals_compile_and_validate() -> None:
    kinds: set[str] = set()
    for suite in paths.LIBERO_SUITES:
        for task in paths.suite_tasks(suite):
            p = bddl.parse_bddl(paths.bddl_file(suite, task))
            tree = goals.compile_goal(p)
            TaskSpec(instruction=p.language, success=tree)
            kinds |= _kinds(tree)
    assert kinds == {"all", "any", "resting_on", "site_on", "site_in", "joint_value"}


def _kinds(tree: dict) -> set[str]:
    ((key, value),) = tree.items()
    out = {key}
    for child in value if isinstance(value, list) else []:
        out |= _kinds(child)
    return out


def _problem(goal: str) -> bddl.BddlProblem:
    return bddl.parse_bddl_text(
        f"""(define (problem p) (:domain robosuite) (:language do it)
        (:regions (plate_region (:target kitchen_table) (:ranges ((0 0 0.1 0.1))))
                  (middle_region (:target wooden_cabinet_1))
                  (cook_region (:target flat_stove_1)))
        (:fixtures kitchen_table - kitchen_table wooden_cabinet_1 - wooden_cabinet
                   flat_stove_1 - flat_stove microwave_1 - microwave)
        (:objects bowl_1 - akita_black_bowl plate_1 - plate)
        (:init) (:goal {goal}))"""
    )


@pytest.mark.parametrize(
    ("goal", "tree"),
    [
        ("(On bowl_1 plate_1)", {"resting_on": {"object": "bowl_1", "support": "plate_1"}}),
        (
            "(On bowl_1 kitchen_table_plate_region)",
            {
                "site_on": {
                    "object": "bowl_1",
                    "site": "kitchen_table_plate_region",
                    "contact": None,
                }
            },
        ),
        (
            "(On bowl_1 flat_stove_1_cook_region)",
            {
                "site_on": {
                    "object": "bowl_1",
                    "site": "flat_stove_1_cook_region",
                    "contact": "flat_stove_1",
                }
            },
        ),
        (
            "(In bowl_1 wooden_cabinet_1_middle_region)",
            {"site_in": {"object": "bowl_1", "site": "wooden_cabinet_1_middle_region"}},
        ),
        (
            "(Open wooden_cabinet_1_middle_region)",
            {
                "any": [
                    {
                        "joint_value": {
                            "joint": "wooden_cabinet_1_middle_level",
                            "below": -0.14,
                            "inclusive": False,
                        }
                    }
                ]
            },
        ),
        (
            "(Close microwave_1)",
            {
                "all": [
                    {
                        "joint_value": {
                            "joint": "microwave_1_microjoint",
                            "above": -0.005,
                            "inclusive": False,
                        }
                    }
                ]
            },
        ),
        (
            "(TurnOn flat_stove_1)",
            {
                "any": [
                    {
                        "joint_value": {
                            "joint": "flat_stove_1_button",
                            "above": 0.5,
                            "inclusive": True,
                        }
                    }
                ]
            },
        ),
        (
            "(Not (TurnOff flat_stove_1))",
            {
                "not": {
                    "all": [
                        {
                            "joint_value": {
                                "joint": "flat_stove_1_button",
                                "below": 0.0,
                                "inclusive": False,
                            }
                        }
                    ]
                }
            },
        ),
    ],
)
def test_atoms(goal: str, tree: dict) -> None:
    assert goals.compile_goal(_problem(goal)) == tree


@pytest.mark.parametrize(
    ("goal", "why"),
    [
        ("(On ghost_1 plate_1)", "'ghost_1' is neither"),
        ("(In bowl_1 plate_1)", "In needs a region"),
        ("(TurnOn microwave_1)", "no 'turnon' for the category 'microwave'"),
        ("(Up bowl_1)", "unknown predicate 'up'"),
    ],
)
def test_unsupported_atoms_are_input_errors(goal: str, why: str) -> None:
    with pytest.raises(MetasimInputError, match=why):
        goals.compile_goal(_problem(goal))
