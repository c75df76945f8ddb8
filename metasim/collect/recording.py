"""What `metasim collect` records of each step: its own format, or a policy preset's.

By default a dataset holds `observation.images.<camera>` (every recorded camera at
`image_size` square), `observation.state` = [joint positions, gripper opening] and the
scene's instruction as `task`.

`record=PRESET` (a policy config, policies/<PRESET>.yaml) records instead exactly what
that preset hands a checkpoint at evaluation: its image keys, cameras, render sizes,
rotations and resizes, its state keys and parts, and its task text (`task_text`). A
checkpoint trained on such a dataset sees the same tensors under `metasim eval
policy=PRESET` as in training, and a dataset recorded with `record=lerobot_metaworld` is
in LeRobot's own Meta-World format (`observation.image` 480x480, `observation.state` =
agent_pos, LeRobot's task descriptions). The collecting policy's action convention must
be the preset's: the recorded actions are the ones the checkpoint will be asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import ValidationError

from metasim.collect.dataset import image_key
from metasim.errors import MetasimInputError, validation_problems
from metasim.paths import POLICIES
from metasim.policies.adapter import TaskText, load_task_text
from metasim.policies.conventions import ActionConvention
from metasim.policies.observation import ObservationSpec
from metasim.scene.compile import CompiledScene
from metasim.yamlio import load_yaml, plain

OWN_STATE = "joint_pos (rad) + gripper opening in [0, 1], 1 = open"


@dataclass(frozen=True)
class Recording:
    """The observation spec recorded, and how the dataset's features are named."""

    spec: ObservationSpec
    preset: str | None = None  # the policy preset whose format this is (None: metasim's)
    task_text: TaskText | None = None

    @property
    def cameras(self) -> list[str]:
        return list(dict.fromkeys(img.camera for img in self.spec.images.values()))

    def image_shapes(self, compiled: CompiledScene) -> dict[str, tuple[int, int, int]]:
        """Feature key -> (H, W, 3) of the image as recorded (rendered, fitted, rotated)."""
        out = {}
        for key, img in self.spec.images.items():
            w, h = img.render_size(compiled.camera_size(img.camera))
            out[key] = tuple(img.finish(np.zeros((1, h, w, 3), np.uint8)).shape[1:])
        return out

    def state_names(self, compiled: CompiledScene) -> dict[str, list[str]]:
        """State feature key -> its column names (`joint_<i>`, `gripper` for metasim's
        own; `<part>_<i>` per part of a preset's, or `<part>` for a 1-wide part)."""
        if self.preset is None:
            n_arm = len(compiled.index.arm_qpos)
            return {"observation.state": [f"joint_{i}" for i in range(n_arm)] + ["gripper"]}
        out: dict[str, list[str]] = {}
        for key, parts in self.spec.state.items():
            names: list[str] = []
            for part in parts:
                one = ObservationSpec(state={key: [part]})
                width = one.state_dim(key, compiled)
                label = part.replace(":", "_")
                names += [label] if width == 1 else [f"{label}_{i}" for i in range(width)]
            out[key] = names
        return out

    def describe_state(self) -> str:
        if self.preset is None:
            return OWN_STATE
        return "; ".join(f"{k} = {' + '.join(v)}" for k, v in self.spec.state.items())

    def instruction(self, compiled: CompiledScene) -> str:
        """The `task` text of every frame of this scene (the preset's, when it rewrites it)."""
        text = compiled.scene.task.instruction
        if self.task_text is None:
            return text
        return self.task_text(compiled.scene, text)


def own(cameras: list[str], size: int) -> Recording:
    """metasim's own format: every camera at size x size, joint positions + gripper."""
    images = {
        image_key(c): {"camera": c, "size": (size, size), "resize": "resize"} for c in cameras
    }
    spec = ObservationSpec.model_validate(
        {"images": images, "state": {"observation.state": ["joint_pos", "gripper"]}, "prompt": None}
    )
    return Recording(spec)


def of_preset(
    name: str, actions: ActionConvention, size: int | None = None, render: int | None = None
) -> Recording:
    """Preset `name`'s format, refused (naming `record`) where a dataset cannot hold it or
    the collecting policy's actions (`actions`) are not in the preset's convention.

    `size`: each image shrunk to size x size after the preset's own rendering, with PIL's
    antialiased bilinear filter -- what torchvision's `Resize` computes, and so what a
    checkpoint that resizes the preset's frames itself (LeRobot's diffusion
    `resize_shape`) sees after its resize, to uint8 rounding.

    `render`: each image rendered at render x render instead of the preset's declared
    render size, and passed on unresized -- what a harness that renders at that size hands
    over (LeRobot's LiberoEnv with `observation_height = observation_width = render`); at
    evaluation the preset's images take the same `render`."""
    path = POLICIES / f"{name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in POLICIES.glob("*.yaml"))
        raise MetasimInputError(
            "command line", [f"record: no policy preset {name!r}"], f"Presets: {', '.join(known)}"
        )
    data = plain(load_yaml(path, "policy config")) or {}
    where = f"record={name} ({path.name})"
    try:
        spec = ObservationSpec.model_validate(data.get("observation") or {})
        conv = ActionConvention.model_validate(data.get("actions") or {})
    except ValidationError as exc:
        raise MetasimInputError(where, validation_problems(exc)) from None
    problems = []
    if spec.raw or not spec.state or not spec.images:
        problems.append("observation: a dataset needs the preset's images and state (not raw)")
    for key in [*spec.images, *spec.state]:
        if "/" in key or not key.startswith("observation."):
            problems.append(f"observation: {key!r} is no LeRobot feature name (observation.*)")
    for key, img in spec.images.items():
        if img.layout != "hwc_uint8" or img.depth:
            problems.append(f"observation.images.{key}: a dataset holds uint8 HWC colour images")
    if conv != actions:
        problems.append(
            f"actions: the preset takes {conv.model_dump()}, the collecting policy gives "
            f"{actions.model_dump()}; its actions would not be the ones the checkpoint is "
            "asked for"
        )
    if problems:
        raise MetasimInputError(where, problems)
    recorded = spec.model_copy(update={"prompt": None, "extra": {}})
    if render is not None:
        if size is not None:
            raise MetasimInputError(
                where, ["render_size and image_size: give one (render at a size, or shrink to it)"]
            )
        _check_unresized(spec, where, "render_size", "")
        rendered = {
            k: img.model_copy(update={"render": (render, render)}) for k, img in spec.images.items()
        }
        recorded = recorded.model_copy(update={"images": rendered})
    if size is not None:
        _check_unresized(spec, where, "image_size", ", so no checkpoint resizes it itself")
        fields = {"size": (size, size), "resize": "resize", "filter": "bilinear"}
        shrunk = {key: img.model_copy(update=fields) for key, img in spec.images.items()}
        recorded = recorded.model_copy(update={"images": shrunk})
    return Recording(recorded, name, load_task_text(data.get("task_text")))


def _check_unresized(spec: ObservationSpec, where: str, option: str, why: str) -> None:
    """`option` applies only to frames the preset passes unresized at a declared render size."""
    for key, img in spec.images.items():
        if img.size is not None or img.render is None:
            raise MetasimInputError(
                where,
                [f"{option}: observation.images.{key} is not a frame passed unresized at a "
                 f"declared render size{why}"],
            )  # fmt: skip


def frame_of(batch: dict[str, Any], j: int, action: np.ndarray, instruction: str) -> dict[str, Any]:
    """Row `j` of an observation batch (arrays (B, ...)) as one LeRobot frame, with the
    action (D,) the policy took from it."""
    frame: dict[str, Any] = {}
    for k, v in batch.items():
        row = np.ascontiguousarray(v[j])
        frame[k] = row if row.dtype == np.uint8 else row.astype(np.float32)
    frame["action"] = np.asarray(action, dtype=np.float32)
    frame["task"] = instruction
    return frame
