"""`policy=torch_module`: a TorchScript module over the env's state, in-process.

The module maps (B, D) float32 state to (B, A) (or (B, H, A)) actions in the declared
convention (`actions:`; default the env's `ee_delta`). The state is the env observation's
terms flattened and concatenated in order (metasim.envs.isaaclab.flat_state): the
module's own list when it carries one (`IsaacLabEnv.export_policy` saves the terms an
RL policy was trained on, e.g. rsl_rl's PPO actor), else `policy.terms`.

    metasim eval suite.tasks=[lift_cube] policy=torch_module policy.path=runs/ppo/policy.pt
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from metasim.envs.isaaclab import META_FILE, POLICY_TERMS, flat_state
from metasim.envs.terms import OBS_TERMS
from metasim.envs.vec_env import CameraView
from metasim.errors import MetasimInputError
from metasim.policies.base import PolicyContext, PolicyOptions, code_field, register_policy


class TorchModuleOptions(PolicyOptions):
    """`path`: the TorchScript file (a checkpoint: loading it runs its code, so it is
    named like code a run folder may not start by itself); `terms`: the state terms it
    reads when the file names none; `device`: where it runs."""

    path: str = code_field(default="")
    terms: list[str] = Field(default_factory=lambda: list(POLICY_TERMS))
    device: str = "cpu"

    def preflight(self) -> None:
        if not self.path or not Path(self.path).is_file():
            raise MetasimInputError(
                "policy config (kind torch_module)",
                [f"policy.path: {self.path!r} is not a TorchScript file"],
            )


def load_module(path: str, device: str) -> tuple[Any, dict[str, Any]]:
    """The TorchScript module at `path` and its metasim metadata ({} if it has none)."""
    import torch

    extra = {META_FILE: ""}
    module = torch.jit.load(path, map_location=device, _extra_files=extra)
    meta = json.loads(extra[META_FILE]) if extra[META_FILE] else {}
    return module.eval(), meta


@register_policy("torch_module", options=TorchModuleOptions)
class TorchModulePolicy:
    """(B, H, A) actions of a TorchScript module over the flattened state."""

    views: tuple[CameraView, ...] = ()

    def __init__(self, ctx: PolicyContext) -> None:
        opts = ctx.typed(TorchModuleOptions)
        opts.preflight()
        self.action_space = ctx.action_space
        self.device = opts.device
        self.module, meta = load_module(opts.path, opts.device)
        if "terms" in meta:
            self.keys = [(str(g), str(k)) for g, k in meta["terms"]]
        else:
            groups = dict(OBS_TERMS.in_order())
            self.keys = [(groups[k].group, k) for k in opts.terms if k in groups]

    def reset(self, instruction: str, env_ids: np.ndarray | None = None) -> None:
        """A feed-forward module keeps no episode state."""

    def act(self, obs: dict[str, Any], env_ids: np.ndarray | None = None) -> np.ndarray:
        import torch

        state = torch.as_tensor(flat_state(obs, self.keys), device=self.device)
        with torch.inference_mode():
            out = self.module(state).detach().cpu().numpy().astype(np.float64)
        return out if out.ndim == 3 else out[:, None, :]

    def close(self) -> None:
        """Nothing to release."""
