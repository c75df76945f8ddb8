"""`metasim collect record=PRESET render_size=N`: the preset's cameras rendered at N x N and
recorded unresized (what a harness rendering at N hands a checkpoint that does not resize),
and the option's refusals (fast: no episode runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from metasim.cli.main import main
from metasim.collect.recording import of_preset
from metasim.errors import MetasimInputError
from metasim.policies.conventions import ActionConvention

LIBERO = ActionConvention(space="osc_pose", rotation="axis_angle", gripper="pm1_open_neg")


def test_render_size_renders_each_preset_image_at_n_unresized() -> None:
    declared = of_preset("lerobot_libero", LIBERO).spec.images
    got = of_preset("lerobot_libero", LIBERO, render=64).spec.images
    assert set(got) == set(declared) == {"observation.images.image", "observation.images.image2"}
    for key, img in got.items():
        assert declared[key].render == (256, 256)  # the preset's own size
        assert img.render == (64, 64) and img.size is None  # rendered at 64, passed as is
        # everything else (camera, origin, rotation, layout) is the preset's
        assert img.model_copy(update={"render": declared[key].render}) == declared[key]


def test_render_size_with_image_size_is_refused() -> None:
    with pytest.raises(MetasimInputError, match="render_size and image_size"):
        of_preset("lerobot_libero", LIBERO, size=64, render=64)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["render_size=64"], "render_size: only with record=PRESET"),
        (["render_size=4"], "render_size"),
    ],
)
def test_render_size_refusals_exit_2(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "refused"
    argv = ["collect", "--quiet", "suite.tasks=[lift_cube]", "episodes=1", f"out={out}", *args]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (out / "data").exists()
