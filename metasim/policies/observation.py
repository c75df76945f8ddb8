"""The observation a policy receives: keys, images, state layout, instruction.

Declared per policy config (`observation:` in policies/<name>.yaml), e.g. openpi LIBERO:

    observation:
      images:
        observation/image: {camera: front, size: [224, 224], resize: resize_with_pad}
        observation/wrist_image: {camera: wrist, size: [224, 224]}
      state:
        observation/state: [ee_pos, "ee_rot:axis_angle", gripper]
      prompt: prompt

State parts, concatenated in the order given:
  joint_pos (n_arm), joint_vel (n_arm), ee_pos (3), ee_quat (4, w x y z),
  ee_rot:<format> (axis_angle | euler_xyz | quat_wxyz | quat_xyzw | rot6d),
  gripper (1, [0, 1] with 1 = open), gripper:<convention> (as in conventions.py),
  hand_quat (4, w x y z of the hand body), gripper_qpos (the finger joints' positions),
  hand_axis_angle (3): the hand body's quaternion as axis * angle computed the way
  robosuite/openpi's LIBERO clients do (`2 acos(w)`, no sign canonicalization, so the
  angle may exceed π): LIBERO's 8-D state is [ee_pos, hand_axis_angle, gripper_qpos].
`raw: true` sends every env observation under `metasim/policy/<k>` and
`metasim/privileged/<k>` plus the scene: for metasim's own policies served remotely.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from metasim.envs.terms import OBS_TERMS, Layout, policy_terms
from metasim.envs.vec_env import CameraView
from metasim.policies.conventions import GRIPPERS, ROT_DIM, from_mat
from metasim.policies.images import ImageSpec
from metasim.rotations import quat_to_mat
from metasim.scene.compile import CompiledScene

GRIPPER_FORMS = tuple(k for k, v in GRIPPERS.items() if v.absolute)  # as a state part


def _check_part(part: str) -> str:
    head, _, arg = part.partition(":")
    terms = policy_terms()  # the env's `policy` observation terms
    if not arg and (head in terms or head == "hand_axis_angle"):
        return part
    if head == "ee_rot" and arg in ROT_DIM:
        return part
    if head == "gripper" and arg in GRIPPER_FORMS:
        return part
    raise ValueError(
        f"unknown state part {part!r}; expected one of {', '.join(terms)}, hand_axis_angle, "
        f"ee_rot:<{'|'.join(ROT_DIM)}>, gripper:<{'|'.join(GRIPPER_FORMS)}>"
    )


class ObservationSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    images: dict[str, ImageSpec] = Field(default_factory=dict)
    state: dict[str, list[str]] = Field(default_factory=dict)
    state_dtype: str = "float32"
    prompt: str | None = "prompt"  # key of the instruction; null: not sent
    extra: dict[str, Any] = Field(default_factory=dict)  # constant keys in every request
    raw: bool = False

    @field_validator("state")
    @classmethod
    def _parts(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        for parts in v.values():
            for p in parts:
                _check_part(p)
        return v

    # ------------------------------------------------------------ env side

    def views(self, compiled: CompiledScene) -> list[CameraView]:
        """Camera views the env must render for these images (checked against the scene)."""
        names = [compiled.model.camera(i).name for i in range(compiled.model.ncam)]
        views: list[CameraView] = []
        for key, img in self.images.items():
            if img.camera not in names:
                raise ValueError(
                    f"observation.images.{key}.camera: the scene {compiled.scene.name!r} has "
                    f"no camera {img.camera!r} (it has {', '.join(names) or 'none'})"
                )
            w, h = img.render_size(compiled.camera_size(img.camera))
            view = CameraView(img.camera, w, h, img.depth)
            if view not in views:
                views.append(view)
        return views

    def state_dim(self, key: str, compiled: CompiledScene) -> int:
        """Width of the state vector `key` for the robot of `compiled`."""
        layout = Layout(compiled, np.zeros(0, int), np.zeros(0, int))
        total = 0
        for part in self.state[key]:
            head, _, arg = part.partition(":")
            if head == "ee_rot":
                total += ROT_DIM[arg]
            elif head == "hand_axis_angle":
                total += 3
            else:
                total += OBS_TERMS[head].shape(layout)[-1]
        return total

    # ------------------------------------------------------------ requests

    def batch(
        self,
        obs: dict[str, Any],
        env_ids: np.ndarray,
        instruction: str,
        compiled: CompiledScene,
    ) -> dict[str, Any]:
        """The request of envs `env_ids` as one dict of (len(env_ids), ...) arrays (the
        prompt as a list of strings)."""
        pol = {k: _rows(v, env_ids) for k, v in obs["policy"].items()}
        out: dict[str, Any] = {}
        for key, img in self.images.items():
            native = compiled.camera_size(img.camera)
            view = CameraView(img.camera, *img.render_size(native), depth=img.depth)
            rgb = pol[f"{view.key}_rgb"]
            on_device = not isinstance(rgb, np.ndarray)  # a torch tensor on the device
            out[key] = img.finish_torch(rgb) if on_device else img.finish(rgb)
            if img.depth:
                depth = pol[f"{view.key}_depth"]
                out[f"{key}_depth"] = (
                    img.finish_torch(depth) if on_device else img.finish_depth(depth)
                )
        for key, parts in self.state.items():
            cols = [_state_part(p, pol) for p in parts]
            out[key] = np.concatenate(cols, axis=1).astype(self.state_dtype)
        if self.raw:
            for group in ("policy", "privileged"):
                for k, v in obs[group].items():
                    out[f"metasim/{group}/{k}"] = np.asarray(v)[env_ids]
        if self.prompt:
            out[self.prompt] = [instruction] * len(env_ids)
        return out

    def requests(
        self,
        obs: dict[str, Any],
        env_ids: np.ndarray,
        instruction: str,
        compiled: CompiledScene,
    ) -> list[dict[str, Any]]:
        """One request dict per env of `env_ids` (what a one-observation server takes)."""
        batch = self.batch(obs, env_ids, instruction, compiled)
        out = []
        for j in range(len(env_ids)):
            req = {k: v[j] for k, v in batch.items()}
            req.update(self.extra)
            out.append(req)
        return out


def scene_payload(compiled: CompiledScene) -> str:
    """The scene as JSON text, sent with the first request of an episode in raw mode."""
    return json.dumps(compiled.scene.model_dump(mode="json"), sort_keys=True)


def quat_axis_angle_robosuite(quat: np.ndarray) -> np.ndarray:
    """(B, 4) w-x-y-z quaternions -> (B, 3) axis * angle as robosuite's `quat2axisangle`
    (which openpi's and LeRobot's LIBERO clients use): angle = 2 acos(w) in [0, 2π], axis
    = xyz / sqrt(1 - w²), zeros when that is 0. No canonical sign, so it matches what
    the policy saw in training bit for bit."""
    w = np.clip(quat[:, 0], -1.0, 1.0)
    den = np.sqrt(1.0 - w * w)
    scale = np.divide(2.0 * np.arccos(w), den, out=np.zeros_like(den), where=den != 0.0)
    return quat[:, 1:4] * scale[:, None]


def _rows(value: Any, env_ids: np.ndarray) -> Any:
    """Rows `env_ids` of an observation term: a host array, or a torch tensor (device
    images) indexed where it lives."""
    if hasattr(value, "device") and hasattr(value, "index_select"):
        if len(env_ids) == value.shape[0] and (env_ids == np.arange(len(env_ids))).all():
            return value
        import torch

        return value.index_select(0, torch.as_tensor(env_ids, device=value.device))
    return np.asarray(value)[env_ids]


def _state_part(part: str, pol: dict[str, np.ndarray]) -> np.ndarray:
    head, _, arg = part.partition(":")
    if head == "ee_rot":
        return np.asarray(from_mat(quat_to_mat(pol["ee_quat"]), arg))
    if head == "hand_axis_angle":
        return quat_axis_angle_robosuite(np.asarray(pol["hand_quat"], dtype=np.float64))
    if head == "gripper" and arg:
        g = np.asarray(pol["gripper"], dtype=np.float64)
        return GRIPPERS[arg].from_open1(g, g)
    return np.asarray(pol[head], dtype=np.float64).reshape(len(pol[head]), -1)
