"""A policy image's `size` and `render` (width, height) are whole numbers in [1, 4096]
(issue 47, finding 7): `size: [0, 0]` handed the policy empty images every step and a
negative size made every episode a policy error, both with exit 0. Refused when the
config is composed (exit 2, naming the field), before any env or server is started."""

from __future__ import annotations

import pytest

from metasim.errors import MetasimInputError
from metasim.evaluate.config import compose
from metasim.policies.images import MAX_SIDE
from tests.cli_refusal import refused


def images(field: str, value: str) -> list[str]:
    return [
        "policy=openpi",
        "~policy.observation.images",
        f"+policy.observation.images={{img: {{camera: front, {field}: {value}}}}}",
    ]


BAD = [("[0,0]", "greater than or equal to 1"), ("[-5,224]", "greater than or equal to 1")]
BAD += [(f"[{MAX_SIDE + 1},224]", f"less than or equal to {MAX_SIDE}")]


@pytest.mark.parametrize("field", ["size", "render"])
@pytest.mark.parametrize(("value", "says"), BAD)
def test_a_bad_image_size_is_refused_naming_the_field(field: str, value: str, says: str) -> None:
    with pytest.raises(MetasimInputError) as exc:
        compose(images(field, value))
    text = str(exc.value)
    assert f"policy.observation.images.img.{field}.0" in text and says in text


@pytest.mark.parametrize("field", ["size", "render"])
def test_sizes_in_bounds_compose(field: str) -> None:
    compose(images(field, f"[1,{MAX_SIDE}]"))
    compose(images(field, "[224,224]"))


def test_eval_exits_2_before_starting_anything(capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(capsys, ["eval", "--quiet", *images("size", "[0,0]")])
    assert "policy.observation.images.img.size" in err
