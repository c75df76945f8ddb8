"""Isaac Lab's RL env contract over a metasim vector env, for RL libraries (rsl_rl, skrl).

`IsaacLabEnv(env)` wraps a `MetasimVectorEnv` (any backend) and exposes the subset of
Isaac Lab's `ManagerBasedRLEnv` / `DirectRLEnv` surface their wrappers read:

- `num_envs`, `device`, `unwrapped` (the Isaac Lab-style env: this object), `cfg`
  (`is_finite_horizon`, `episode_length_s`, `decimation`, `sim_dt`), `max_episode_length`,
  `episode_length_buf` (B,) long on `device` (writable: rsl_rl randomises it once),
  `single_observation_space` / `observation_space`, `single_action_space` / `action_space`,
  `num_actions`, `obs_buf`, `seed(seed)`, `reset(seed=None)`, `step`, `close`.
- Observation groups, a dict of (B, D) float32 tensors on `device`: `"policy"` (the
  actor's state: `POLICY_TERMS` that exist in the scene, object poses included, as
  Isaac Lab's lift task gives them) and `"critic"` (every state term of the env's
  `policy` and `privileged` groups: the privileged critic). Terms are flattened and
  concatenated in registration order (metasim.envs.terms); images are not in them.
- `step(actions) -> (obs, reward, terminated, truncated, extras)`: actions (B, A) in
  [-1, 1] (mapped linearly to the env's action bounds; `normalized_actions=False`: in
  the env's units), reward (B,) float32 (metasim.envs.rewards: dense where the task's
  predicate has terms, else success), `terminated` (B,) bool: success or a physics
  failure, `truncated` (B,) bool: the time limit; `extras["time_outs"]` = truncated,
  `extras["log"]` scalars (`Episode_Reward/<term>`, `Episode_Termination/<why>`,
  `Metrics/success`) over the episodes that ended this step, `extras["metasim"]` the
  env's own extras (its per-episode numbers, NumPy).
- Autoreset as Isaac Lab's: an env that ends is reset in the same step (the obs row is
  its next episode's first), with the seeds the wrapped env's own autoreset would draw.

`RslRlVecEnv(env)` adds rsl_rl's `VecEnv` (`get_observations() -> TensorDict`, step
-> (obs, reward, dones, extras)), as Isaac Lab's `RslRlVecEnvWrapper` does.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from metasim.envs.rewards import SUCCESS_WEIGHT, dense_terms
from metasim.envs.terms import terms_of
from metasim.envs.vec_env import MetasimVectorEnv
from metasim.tasks.predicates import TaskView

if TYPE_CHECKING:
    import torch

# The actor's state terms (those the scene has), in this order: proprioception, then the
# objects' and fixtures' state a state-based policy needs to find its goal.
POLICY_TERMS: tuple[str, ...] = ("joint_pos", "joint_vel", "gripper", "ee_pos", "ee_quat")
POLICY_TERMS += ("object_pos", "fixture_qpos")
META_FILE = "metasim.json"  # a saved policy's terms and action space (TorchScript extra file)


@dataclass(frozen=True)
class EnvCfg:
    """What Isaac Lab's wrappers read of an env's `cfg`."""

    task: str
    backend: str
    num_envs: int
    episode_length_s: float
    decimation: int  # physics substeps per control step
    sim_dt: float
    is_finite_horizon: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def state_keys(env: MetasimVectorEnv, names: tuple[str, ...] | None) -> list[tuple[str, str]]:
    """(group, term) of the env's state terms in registration order: those in `names`
    (None: every one)."""
    return [(t.group, k) for k, t in terms_of(env.layout) if names is None or k in names]


def state_dim(env: MetasimVectorEnv, keys: list[tuple[str, str]]) -> int:
    """D of `flat_state` over `keys` in `env`'s scene."""
    shapes = {k: t.shape(env.layout) for k, t in terms_of(env.layout)}
    return int(sum(np.prod(shapes[k]) for _, k in keys))


def flat_state(obs: dict[str, Any], keys: list[tuple[str, str]]) -> np.ndarray:
    """(B, D) float32: the terms `keys` of an env observation (its groups of (B, ...)
    arrays), flattened per env and concatenated in order."""
    parts = [np.asarray(obs[g][k], dtype=np.float32) for g, k in keys]
    batch = parts[0].shape[0] if parts else 0
    return np.concatenate([p.reshape(batch, -1) for p in parts], axis=1)


class IsaacLabEnv:
    """The Isaac Lab RL env contract over `env` (see the module docstring). The wrapper
    owns `env`: it turns the env's own autoreset off and reads its observations as NumPy."""

    def __init__(
        self,
        env: MetasimVectorEnv,
        device: str | None = None,
        policy_terms: tuple[str, ...] = POLICY_TERMS,
        normalized_actions: bool = True,
        dense: bool = True,
        max_episode_length: int | None = None,
    ) -> None:
        import torch

        self.env = env
        env.autoreset, env.array_type = False, "numpy"
        self.num_envs = env.num_envs
        self.device = device or env.device
        # Isaac Lab's episode_length_s, in control steps: at most the task's time limit
        limit = int(env.max_episode_steps)
        self.max_episode_length = min(max_episode_length or limit, limit)
        self.policy_keys = state_keys(env, policy_terms)
        self.critic_keys = state_keys(env, None)
        compiled = env.compiled
        self.cfg = EnvCfg(
            task=compiled.scene.name,
            backend=env.backend,
            num_envs=env.num_envs,
            episode_length_s=self.max_episode_length * compiled.control_dt,
            decimation=compiled.substeps,
            sim_dt=float(compiled.model.opt.timestep),
        )
        self.reward_terms = dense_terms(compiled) if dense else []
        self.normalized_actions = normalized_actions
        self._low, self._high = (np.asarray(b, dtype=np.float64) for b in env.controller.bounds())
        self.num_actions = len(self._low)
        self._build_spaces()
        self.episode_length_buf = torch.zeros(self.num_envs, dtype=torch.long, device=self.device)
        self._init_pos = np.zeros((self.num_envs, compiled.model.nbody, 3))
        self._sums = {t.name: np.zeros(self.num_envs) for t in self.reward_terms}
        self._sums["total"] = np.zeros(self.num_envs)
        self.obs_buf: dict[str, torch.Tensor] = {}
        self._seed: int | None = None
        self.extras: dict[str, Any] = {}

    def _build_spaces(self) -> None:
        def box(dim: int, bound: float = np.inf) -> spaces.Box:
            return spaces.Box(-bound, bound, (dim,), dtype=np.float32)

        self.single_observation_space = spaces.Dict(
            {
                "policy": box(state_dim(self.env, self.policy_keys)),
                "critic": box(state_dim(self.env, self.critic_keys)),
            }
        )
        self.observation_space = gym.vector.utils.batch_space(
            self.single_observation_space, self.num_envs
        )
        if self.normalized_actions:
            self.single_action_space = box(self.num_actions, 1.0)
        else:
            self.single_action_space = spaces.Box(self._low, self._high, dtype=np.float32)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)

    @property
    def unwrapped(self) -> IsaacLabEnv:
        return self

    def seed(self, seed: int = -1) -> int:
        """The seed the next `reset` without one draws its episodes from (the count of
        episodes restarts there)."""
        self._seed = max(int(seed), 0)
        return self._seed

    # ------------------------------------------------------------ tensors

    def _tensor(self, value: np.ndarray, dtype: Any = None) -> torch.Tensor:
        import torch

        return torch.as_tensor(np.ascontiguousarray(value), dtype=dtype, device=self.device)

    def _groups(self, obs: dict[str, Any]) -> dict[str, torch.Tensor]:
        self.obs_buf = {
            "policy": self._tensor(flat_state(obs, self.policy_keys)),
            "critic": self._tensor(flat_state(obs, self.critic_keys)),
        }
        return self.obs_buf

    def env_actions(self, actions: Any) -> np.ndarray:
        """(B, A) actions as the wrapped env takes them (float64, its units)."""
        if hasattr(actions, "detach"):
            actions = actions.detach().cpu().numpy()
        a = np.asarray(actions, dtype=np.float64)
        if self.normalized_actions:
            a = self._low + (np.clip(a, -1.0, 1.0) + 1.0) * 0.5 * (self._high - self._low)
        return np.asarray(np.clip(a, self._low, self._high))

    # ------------------------------------------------------------ the MDP

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        """Reset every env (episodes from `seed`'s stream, or the running count)."""
        seed, self._seed = (self._seed if seed is None else seed), None
        obs, info = self.env.reset(seed=seed, options=options)
        self._started(np.arange(self.num_envs))
        self.extras = {"log": {}, "metasim": info}
        return self._groups(obs), self.extras

    def _started(self, ids: np.ndarray) -> None:
        self._init_pos[ids] = self.env.handler.kinematics().body_pos[ids]
        self.episode_length_buf[self._tensor(ids)] = 0
        for total in self._sums.values():
            total[ids] = 0.0

    def _reward(self, success: np.ndarray) -> np.ndarray:
        if not self.reward_terms:
            reward = success.astype(np.float64)
        else:
            view = TaskView(self.env.handler.kinematics(), self._init_pos, None)
            reward = SUCCESS_WEIGHT * success
            for term in self.reward_terms:
                value = term.weight * term.fn(view)
                self._sums[term.name] += value
                reward = reward + value
        self._sums["total"] += reward
        return np.asarray(reward)

    def step(
        self, actions: Any
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Any]]:
        obs, _, success, limit, inner = self.env.step(self.env_actions(actions))
        unstable = np.asarray(inner["unstable"])
        reward = self._reward(np.asarray(success))
        self.episode_length_buf += 1
        at_limit = self.episode_length_buf.cpu().numpy() >= self.max_episode_length
        terminated = np.asarray(success) | unstable
        truncated = (at_limit | np.asarray(limit)) & ~terminated
        done = terminated | truncated
        log: dict[str, float] = {}
        if done.any():
            ids = np.flatnonzero(done)
            log = self._log(ids, np.asarray(success), truncated, unstable)
            obs, _ = self.env.reset(options={"env_ids": ids})  # the env's own autoreset draws
            self._started(ids)
        self.extras = {"time_outs": self._tensor(truncated), "log": log, "metasim": inner}
        return (
            self._groups(obs),
            self._tensor(reward, self._float32()),
            self._tensor(terminated),
            self._tensor(truncated),
            self.extras,
        )

    def _float32(self) -> Any:
        import torch

        return torch.float32

    def _log(
        self, ids: np.ndarray, success: np.ndarray, truncated: np.ndarray, unstable: np.ndarray
    ) -> dict[str, float]:
        """Isaac Lab's episode log: means over the episodes ending now."""
        log = {f"Episode_Reward/{k}": float(v[ids].mean()) for k, v in self._sums.items()}
        log["Episode_Termination/success"] = float(success[ids].sum())
        log["Episode_Termination/time_out"] = float(truncated[ids].sum())
        log["Episode_Termination/unstable"] = float(unstable[ids].sum())
        log["Metrics/success"] = float(success[ids].mean())
        return log

    def close(self) -> None:
        self.env.close()

    # ------------------------------------------------------------ policies

    def export_policy(self, actor: Any, path: str | Path) -> Path:
        """Save `actor` (a torch module: (B, D) "policy" obs -> (B, A) actions as `step`
        takes them, e.g. rsl_rl's `runner.alg.get_policy().as_jit()`) as TorchScript that
        outputs the env's own action units, with the terms it reads and the action space
        (`policy=torch_module policy.path=...` scores it with `metasim eval`)."""
        import torch

        module = _EnvUnits(actor, self._low, self._high, self.normalized_actions).eval()
        example = torch.zeros(1, state_dim(self.env, self.policy_keys))
        with torch.no_grad():
            traced = torch.jit.trace(module, example)
        meta = {
            "terms": [list(k) for k in self.policy_keys],
            "action_space": self.env.controller.kind,
            "task": self.cfg.task,
        }
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        torch.jit.save(traced, str(out), _extra_files={META_FILE: json.dumps(meta)})
        return out


def _EnvUnits(actor: Any, low: np.ndarray, high: np.ndarray, normalized: bool) -> Any:
    """A torch module: `actor`'s output clipped and mapped to the env's action units."""
    import torch

    class EnvUnits(torch.nn.Module):
        low: torch.Tensor
        high: torch.Tensor

        def __init__(self) -> None:
            super().__init__()
            self.actor = actor
            self.register_buffer("low", torch.as_tensor(low, dtype=torch.float32))
            self.register_buffer("high", torch.as_tensor(high, dtype=torch.float32))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            a = self.actor(x)
            if normalized:
                a = self.low + (a.clamp(-1.0, 1.0) + 1.0) * 0.5 * (self.high - self.low)
            return torch.maximum(torch.minimum(a, self.high), self.low)

    return EnvUnits()


class RslRlVecEnv:
    """rsl_rl's `VecEnv` over the contract, as Isaac Lab's `RslRlVecEnvWrapper`: obs as a
    `TensorDict`, `dones` = terminated | truncated (long), `extras["time_outs"]`."""

    def __init__(self, env: IsaacLabEnv) -> None:
        self.env = env
        self.num_envs, self.device = env.num_envs, env.device
        self.num_actions, self.max_episode_length = env.num_actions, env.max_episode_length
        self.cfg = env.cfg.to_dict()
        self.env.reset()  # the runner does not reset

    @property
    def unwrapped(self) -> IsaacLabEnv:
        return self.env

    @property
    def episode_length_buf(self) -> torch.Tensor:
        return self.env.episode_length_buf

    @episode_length_buf.setter
    def episode_length_buf(self, value: torch.Tensor) -> None:
        self.env.episode_length_buf = value

    def _tensordict(self, obs: dict[str, torch.Tensor]) -> Any:
        from tensordict import TensorDict

        return TensorDict(obs, batch_size=[self.num_envs])

    def get_observations(self) -> Any:
        return self._tensordict(self.env.obs_buf)

    def step(self, actions: torch.Tensor) -> tuple[Any, torch.Tensor, torch.Tensor, dict]:
        obs, reward, terminated, truncated, extras = self.env.step(actions)
        dones = (terminated | truncated).long()
        return self._tensordict(obs), reward, dones, extras

    def close(self) -> None:
        self.env.close()
