"""The BDDL parser reads LIBERO's problem files as LIBERO does (language, regions, typed
lists, init and goal), and the qpos layout it implies matches the init-state files."""

from __future__ import annotations

from collections import Counter

import pytest

from metasim.errors import MetasimInputError
from metasim.libero.importer import assets, bddl, paths

TEXT = """
(define (problem LIBERO_Kitchen_Tabletop_Manipulation)
  (:domain robosuite)
  (:language Put the Bowl ; a comment
     on the plate)
  (:regions
    (plate_region (:target kitchen_table) (:ranges ((0.04 -0.03 0.06 -0.01) (0 0 0.1 0.1))))
    (cabinet_region (:target kitchen_table) (:ranges ((0.02 -0.25 0.04 -0.23)))
        (:yaw_rotation ((3.14 3.15))))
    (top_region (:target wooden_cabinet_1))
  )
  (:fixtures kitchen_table - kitchen_table wooden_cabinet_1 - wooden_cabinet)
  (:objects bowl_1 bowl_2 - akita_black_bowl plate_1 - plate)
  (:obj_of_interest bowl_1 plate_1)
  (:init (On bowl_1 kitchen_table_plate_region) (Open wooden_cabinet_1_top_region))
  (:goal (And (On bowl_1 plate_1) (Not (In bowl_2 wooden_cabinet_1_top_region))))
)
"""


def test_parse_text() -> None:
    p = bddl.parse_bddl_text(TEXT)
    assert p.problem_name == "libero_kitchen_tabletop_manipulation"
    # lower-cased and comment-free, as LIBERO's reader (bddl's tokenizer) has it
    assert p.language == "put the bowl on the plate"
    assert set(p.regions) == {
        "kitchen_table_plate_region",
        "kitchen_table_cabinet_region",
        "wooden_cabinet_1_top_region",
    }
    plate = p.regions["kitchen_table_plate_region"]
    assert plate.ranges == ((0.04, -0.03, 0.06, -0.01), (0.0, 0.0, 0.1, 0.1))
    assert plate.yaw_rotation == (0.0, 0.0)
    assert p.regions["kitchen_table_cabinet_region"].yaw_rotation == (3.14, 3.15)
    assert p.regions["wooden_cabinet_1_top_region"].ranges == ()
    assert p.fixtures == {
        "kitchen_table": ["kitchen_table"],
        "wooden_cabinet": ["wooden_cabinet_1"],
    }
    assert p.objects == {"akita_black_bowl": ["bowl_1", "bowl_2"], "plate": ["plate_1"]}
    assert p.obj_of_interest == ["bowl_1", "plate_1"]
    assert p.init == [
        ("on", "bowl_1", "kitchen_table_plate_region"),
        ("open", "wooden_cabinet_1_top_region"),
    ]
    assert p.goal == (
        "and",
        [("on", "bowl_1", "plate_1"), ("not", [("in", "bowl_2", "wooden_cabinet_1_top_region")])],
    )
    assert p.goal_atoms() == [
        ("on", "bowl_1", "plate_1"),
        ("in", "bowl_2", "wooden_cabinet_1_top_region"),
    ]
    assert p.category_of("bowl_2") == "akita_black_bowl"
    assert p.category_of("nothing") is None


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("(define (problem x) (:goal (And)))", "no \\(:language"),
        ("(define (problem x) (:language hi)", "unbalanced"),
        ("(define (problem x) (:language hi) (:goal (and)) (:regions (r (:size 1))))", "unknown"),
        ("(problem x)", "define"),
    ],
)
def test_malformed_is_an_input_error(tmp_path, text: str, why: str) -> None:
    f = tmp_path / "bad.bddl"
    f.write_text(text)
    with pytest.raises(MetasimInputError, match=why):
        bddl.parse_bddl(f)


def test_language_comes_from_the_file_not_its_name() -> None:
    """The parser's `language` is the file's `:language` text (LIBERO-PRO's `_lan`
    variants keep the original file names with new language)."""
    original = bddl.parse_bddl(paths.bddl_file("libero_goal", 0))
    variant = bddl.parse_bddl(paths.bddl_file("libero_goal_lan", 0))
    name = paths.task_name("libero_goal_lan", 0)
    assert name == "open_the_middle_drawer_of_the_cabinet"
    assert original.language == "open the middle layer of the drawer"
    assert variant.language == "open the cabinet’s middle drawer"
    assert variant.language != name.replace("_", " ")


def _all_130() -> list[tuple[str, str]]:
    return [(s, t) for s in paths.LIBERO_SUITES for t in paths.suite_tasks(s)]


def test_all_130_parse_and_their_goal_predicates() -> None:
    kinds: Counter[str] = Counter()
    for suite, task in _all_130():
        p = bddl.parse_bddl(paths.bddl_file(suite, task))
        assert p.language and p.goal[0] == "and"
        kinds.update(a[0] for a in p.goal_atoms())
    # The list in docs/libero.md.
    assert kinds == {"in": 63, "on": 61, "close": 11, "turnon": 8, "open": 7, "turnoff": 1}


def test_joint_layout_matches_every_init_state_file() -> None:
    for suite, task in _all_130():
        p = bddl.parse_bddl(paths.bddl_file(suite, task))
        layout = assets.libero_joint_layout(p)
        width = 1 + sum(s.nq for s in layout) + sum(s.nv for s in layout)
        assert paths.load_init_states(suite, task).shape == (50, width), (suite, task)


def test_joint_layout_of_libero_goal_0() -> None:
    """The joint names and order of LIBERO's compiled model (read from the reference
    simulator's exported MJCF for this task)."""
    p = bddl.parse_bddl(paths.bddl_file("libero_goal", 0))
    names = [s.name for s in assets.libero_joint_layout(p)]
    assert names == [
        *(f"robot0_joint{i}" for i in range(1, 8)),
        "gripper0_finger_joint1",
        "gripper0_finger_joint2",
        "akita_black_bowl_1_joint0",
        "cream_cheese_1_joint0",
        "wine_bottle_1_joint0",
        "plate_1_joint0",
        "wooden_cabinet_1_top_level",
        "wooden_cabinet_1_middle_level",
        "wooden_cabinet_1_bottom_level",
        "flat_stove_1_button",
    ]
    cabinet = assets.object_model("wooden_cabinet")
    assert cabinet.site_joints("middle_region") == ("middle_level",)


def test_every_bddl_file_of_libero_pro_parses() -> None:
    files = sorted(paths.bddl_dir().glob("*/*.bddl"))
    assert len(files) > 600
    for f in files:
        assert bddl.parse_bddl(f).language
