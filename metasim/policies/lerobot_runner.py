"""Load a LeRobot checkpoint folder and run it with LeRobot's own code.

A LeRobot checkpoint (`.../checkpoints/<step>/pretrained_model/`) holds `config.json` and
`model.safetensors` (the policy) plus `policy_preprocessor.json` / `policy_postprocessor.json`
and their `.safetensors` state (normalization statistics live there, not in the model).
`LeRobotRunner` loads all four with LeRobot's API (policy class from the config's `type`,
`from_pretrained`, the processor pipeline loader) and runs, per step,
preprocess -> `select_action` -> postprocess, so the actions it returns are unnormalized.

Inputs are metasim's conventions: images uint8 (B, H, W, 3), state float (B, S). The runner
converts them to LeRobot's (float (B, 3, H, W) in [0, 1]) and refuses, with a ValueError
naming the key, an input that is missing, unexpected or of the wrong shape: nothing is resized
or dropped silently.

Nothing is downloaded: the folder must be local, and a config's
`pretrained_backbone_weights` (ImageNet ResNet weights that ACT and Diffusion would fetch
before overwriting them with the checkpoint's) is cleared before the policy is built.

LeRobot is installed by `scripts/install_lerobot.sh` (it pins an older torch, so it goes in
with `--no-deps` next to the torch / torchvision pair of metasim's `[torch]` extra).
"""

from __future__ import annotations

import contextlib
import copy
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from metasim.errors import MetasimInputError, one_line

CONFIG_FILE = "config.json"
MODEL_FILE = "model.safetensors"
PREPROCESSOR_FILE = "policy_preprocessor.json"
POSTPROCESSOR_FILE = "policy_postprocessor.json"
REQUIRED_FILES = (CONFIG_FILE, MODEL_FILE, PREPROCESSOR_FILE, POSTPROCESSOR_FILE)

OBS_STATE = "observation.state"
OBS_ENV_STATE = "observation.environment_state"
TASK = "task"  # the instruction, a list of strings (LeRobot's `add_envs_task`)

_INSTALL_HINT = "install it with: bash scripts/install_lerobot.sh"
_MIGRATE_HINT = (
    "checkpoints saved by LeRobot < 0.4 keep normalization inside the model; convert them "
    "with `python -m lerobot.processor.migrate_policy_normalization`"
)


def import_lerobot() -> None:
    """Import LeRobot's policy and processor packages, or raise ImportError with a hint."""
    try:
        import lerobot.policies.factory
        import lerobot.processor  # noqa: F401
    except ImportError as err:
        raise ImportError(f"LeRobot checkpoints need LeRobot ({err}); {_INSTALL_HINT}") from err


def check_checkpoint_folder(path: Path) -> list[str]:
    """Problems with a checkpoint folder's files (empty when it looks loadable)."""
    if not path.exists():
        return ["folder does not exist"]
    if not path.is_dir():
        return ["not a folder (expected a LeRobot checkpoint folder, e.g. .../pretrained_model)"]
    problems = [f"{name} is missing" for name in REQUIRED_FILES if not (path / name).is_file()]
    if (path / CONFIG_FILE).is_file():
        try:
            config = json.loads((path / CONFIG_FILE).read_text())
        except (OSError, ValueError) as err:
            problems.append(f"{CONFIG_FILE}: not valid JSON ({one_line(str(err))})")
        else:
            if not isinstance(config, dict) or not isinstance(config.get("type"), str):
                problems.append(f"{CONFIG_FILE}: no policy 'type' field")
    for name in (PREPROCESSOR_FILE, POSTPROCESSOR_FILE):
        if not (path / name).is_file():
            continue
        try:
            pipeline = json.loads((path / name).read_text())
            steps = pipeline["steps"]
            state_files = [s["state_file"] for s in steps if s.get("state_file")]
        except (OSError, ValueError, KeyError, TypeError) as err:
            problems.append(f"{name}: not a LeRobot processor pipeline ({one_line(str(err))})")
            continue
        problems += [
            f"{state} is missing (named by {name})"
            for state in state_files
            if not (path / state).is_file()
        ]
    return problems


def checkpoint_problems(path: str | Path) -> None:
    """`check_checkpoint_folder`'s problems as an input error naming the folder."""
    problems = check_checkpoint_folder(Path(path))
    if problems:
        no_processor = {f"{PREPROCESSOR_FILE} is missing", f"{POSTPROCESSOR_FILE} is missing"}
        hint = _MIGRATE_HINT if no_processor & set(problems) else ""
        raise MetasimInputError(str(path), problems, hint=hint)


class LeRobotRunner:
    """A LeRobot policy checkpoint, loaded from a local folder, run on numpy batches."""

    def __init__(self, path: str | Path, device: str = "cpu", any_image_size: bool = False) -> None:
        self.path = Path(path)
        self.device = device
        # True: images of any height and width go to the policy as they are (LeRobot's eval
        # hands its env's frames over unresized; the policy's processors resize them)
        self.any_image_size = any_image_size
        self._per_env: dict[int, Any] = {}  # env -> its policy copy (select_action_of)
        checkpoint_problems(path)
        import_lerobot()
        from lerobot.configs.policies import PreTrainedConfig
        from lerobot.policies.factory import get_policy_class, make_pre_post_processors

        # LeRobot prints progress to stdout; keep stdout clean for metasim's own output.
        with contextlib.redirect_stdout(sys.stderr):
            try:
                config = PreTrainedConfig.from_pretrained(self.path)
            except Exception as err:  # draccus/config errors come in many types
                raise MetasimInputError(
                    str(path), [f"{CONFIG_FILE}: {one_line(str(err))}"]
                ) from err
            config.device = device
            if getattr(config, "pretrained_backbone_weights", None) is not None:
                # The checkpoint holds the trained backbone; never fetch ImageNet weights.
                config.pretrained_backbone_weights = None
            try:
                policy_cls = get_policy_class(config.type)
            except (NotImplementedError, ValueError) as err:
                raise MetasimInputError(str(path), [f"{CONFIG_FILE}: {err}"]) from err
            try:
                policy = policy_cls.from_pretrained(self.path, config=config, strict=True)
            except Exception as err:  # missing/unexpected keys, shapes, a corrupt file
                problem = f"{MODEL_FILE}: cannot load it into the policy {CONFIG_FILE} describes"
                raise MetasimInputError(str(path), [f"{problem} ({one_line(str(err))})"]) from err
            try:
                preprocessor, postprocessor = make_pre_post_processors(
                    config,
                    pretrained_path=str(self.path),
                    preprocessor_overrides={"device_processor": {"device": device}},
                )
            except Exception as err:  # LeRobot raises several types for a bad pipeline
                raise MetasimInputError(
                    str(path), [f"processor pipeline: {one_line(str(err))}"]
                ) from err
        policy.eval()
        self.config: Any = config
        self.policy: Any = policy
        self.preprocessor: Any = preprocessor
        self.postprocessor: Any = postprocessor
        self._queued_batch: int | None = None

    # ---- what the checkpoint expects and returns ----

    @property
    def policy_type(self) -> str:
        return str(self.config.type)

    @property
    def image_shapes(self) -> dict[str, tuple[int, int, int]]:
        """(C, H, W) per image key, e.g. {"observation.images.front": (3, 96, 96)}. A
        checkpoint may declare (H, W, C) (configs written from a dataset's features, e.g.
        [256, 256, 3]): a last axis of 1 or 3 after a longer first one is read as that."""
        out = {}
        for key, ft in self.config.image_features.items():
            a, b, c = (int(n) for n in ft.shape)
            out[key] = (c, a, b) if c in (1, 3) and a not in (1, 3) else (a, b, c)
        return out

    @property
    def image_keys(self) -> tuple[str, ...]:
        return tuple(self.image_shapes)

    @property
    def state_dim(self) -> int | None:
        feature = self.config.robot_state_feature
        return None if feature is None else int(feature.shape[0])

    @property
    def env_state_dim(self) -> int | None:
        feature = self.config.env_state_feature
        return None if feature is None else int(feature.shape[0])

    @property
    def action_dim(self) -> int:
        return int(self.config.action_feature.shape[0])

    @property
    def chunk_size(self) -> int:
        """Actions predicted per model call (ACT `chunk_size`, Diffusion `horizon`)."""
        for name in ("chunk_size", "horizon"):
            value = getattr(self.config, name, None)
            if value is not None:
                return int(value)
        return 1

    @property
    def n_action_steps(self) -> int:
        """Actions `select_action` pops from one chunk before it calls the model again."""
        return int(getattr(self.config, "n_action_steps", 1))

    @property
    def input_shapes(self) -> dict[str, tuple[int, ...]]:
        """Per input key, the per-sample shape `select_action` takes (numpy layout)."""
        shapes: dict[str, tuple[int, ...]] = {
            key: (h, w, c) for key, (c, h, w) in self.image_shapes.items()
        }
        if self.state_dim is not None:
            shapes[OBS_STATE] = (self.state_dim,)
        if self.env_state_dim is not None:
            shapes[OBS_ENV_STATE] = (self.env_state_dim,)
        return shapes

    # ---- running ----

    def reset(self) -> None:
        """Start of an episode: drop queued actions (and ensembles, observation history)."""
        self.policy.reset()
        self.preprocessor.reset()
        self.postprocessor.reset()
        self._queued_batch = None

    def select_action_of(self, env: int, batch: dict[str, Any]) -> np.ndarray:
        """`select_action` of env `env` alone, on its own copy of the policy: the copy
        shares the weights but keeps its own queues (observation history, queued actions),
        as LeRobot's eval runs each env's episode; (1, action_dim) float32 for a one-row
        batch. `reset_env(env)` starts the env's next episode."""
        import torch

        policy = self._per_env.get(env)
        if policy is None:
            if getattr(self.config, "temporal_ensemble_coeff", None) is not None:
                raise ValueError("per-env queues: temporal ensembling keeps shared state")
            policy = copy.copy(self.policy)  # shallow: the same modules and weights
            policy.reset()  # its own queues
            self._per_env[env] = policy
        obs = self._to_lerobot(batch)
        with torch.inference_mode():
            action = self.postprocessor(policy.select_action(self.preprocessor(obs)))
        return self._to_numpy(action, (len(obs[TASK]), self.action_dim))

    def reset_env(self, env: int) -> None:
        """The start of env `env`'s next episode (`select_action_of`): a fresh queue."""
        self._per_env.pop(env, None)

    def select_action(self, batch: dict[str, Any]) -> np.ndarray:
        """One unnormalized action per env, (B, action_dim) float32.

        Like LeRobot's `select_action`, consecutive calls pop queued actions of the last
        chunk; call `reset()` at the start of each episode.
        """
        import torch

        obs = self._to_lerobot(batch)
        size = len(obs[TASK])
        if self._queued_batch is not None and self._queued_batch != size:
            raise ValueError(
                f"batch size changed from {self._queued_batch} to {size} without reset(); "
                "queued actions belong to the old batch"
            )
        self._queued_batch = size
        with torch.inference_mode():
            action = self.policy.select_action(self.preprocessor(obs))
            action = self.postprocessor(action)
        return self._to_numpy(action, (size, self.action_dim))

    def predict_chunk(self, batch: dict[str, Any]) -> np.ndarray:
        """A whole unnormalized action chunk, (B, chunk_size, action_dim) float32.

        Stateless for ACT (it does not touch the action queue).
        """
        import torch

        if not hasattr(self.policy, "predict_action_chunk"):
            raise NotImplementedError(f"{self.policy_type} policies do not predict action chunks")
        obs = self._to_lerobot(batch)
        with torch.inference_mode():
            chunk = self.policy.predict_action_chunk(self.preprocessor(obs))
            size, horizon = int(chunk.shape[0]), int(chunk.shape[1])
            # The postprocessor works on (N, action_dim) actions, as in LeRobot's policy server.
            flat = self.postprocessor(chunk.reshape(size * horizon, -1))
        return self._to_numpy(flat, (size * horizon, self.action_dim)).reshape(
            size, horizon, self.action_dim
        )

    def _to_numpy(self, action: Any, shape: tuple[int, ...]) -> np.ndarray:
        out = np.asarray(action.detach().float().cpu().numpy(), dtype=np.float32)
        if out.shape != shape:
            raise RuntimeError(f"policy returned actions of shape {out.shape}, expected {shape}")
        return out

    def _to_lerobot(self, batch: dict[str, Any]) -> dict[str, Any]:
        """Check a numpy batch against the checkpoint and convert it to LeRobot tensors.
        `task` (a list of strings, one per row) goes through as it is; without it every
        row gets "", as LeRobot's evaluation gives an env without an instruction."""
        import torch

        batch = dict(batch)
        task = batch.pop(TASK, None)
        expected = self.input_shapes
        missing = [key for key in expected if key not in batch]
        if missing:
            raise ValueError(
                f"missing input {missing[0]!r} (the checkpoint takes {sorted(expected)})"
            )
        unexpected = sorted(set(batch) - set(expected))
        if unexpected:
            raise ValueError(
                f"unexpected input {unexpected[0]!r} (the checkpoint takes {sorted(expected)})"
            )
        size: int | None = None
        out: dict[str, Any] = {}
        for key, shape in expected.items():
            value = np.asarray(batch[key])
            if self.any_image_size and key in self.image_shapes and value.ndim == 4:
                shape = (*value.shape[1:3], shape[2])  # any H, W; the declared channels
            if value.ndim != len(shape) + 1 or tuple(value.shape[1:]) != shape:
                raise ValueError(
                    f"input {key!r} has shape {tuple(value.shape)}, expected (B, "
                    + ", ".join(str(n) for n in shape)
                    + ")"
                )
            if size is None:
                size = int(value.shape[0])
            elif value.shape[0] != size:
                raise ValueError(
                    f"input {key!r} has batch size {value.shape[0]}, other inputs have {size}"
                )
            if key in self.image_shapes:
                if value.dtype != np.uint8:
                    raise ValueError(f"input {key!r} must be uint8 (B, H, W, 3), got {value.dtype}")
                tensor = torch.from_numpy(np.ascontiguousarray(value)).permute(0, 3, 1, 2)
                out[key] = tensor.to(self.device, dtype=torch.float32).div_(255.0)
            else:
                if not np.issubdtype(value.dtype, np.floating):
                    raise ValueError(f"input {key!r} must be float, got {value.dtype}")
                out[key] = torch.from_numpy(value.astype(np.float32)).to(self.device)
        if size == 0:
            raise ValueError("empty batch")
        texts = [""] * int(size or 0) if task is None else [str(t) for t in task]
        if len(texts) != size:
            raise ValueError(f"input {TASK!r} has {len(texts)} texts, other inputs have {size}")
        out[TASK] = texts
        return out
