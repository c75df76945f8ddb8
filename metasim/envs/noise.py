"""Perturbations the env applies while stepping (the runtime axes of a perturbation grid),
one `RuntimeNoise` per env (world) of a batch, so cells of a grid that differ only in
runtime axes run side by side in one batch (`WorldNoise`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields

import numpy as np

from metasim.tasks.seeds import episode_rng


@dataclass(frozen=True)
class RuntimeNoise:
    """Perturbations applied while stepping, drawn per episode from its seed.

    state_noise: std of Gaussian noise on proprioception and object poses (m, rad);
    image_noise: std of Gaussian pixel noise (0-255 scale); image_blur: std in pixels of a
    Gaussian blur of every camera image (before the pixel noise: a camera's softness,
    then its sensor noise); action_noise: std added to
    each action component; action_latency: control steps between a policy's action and
    its execution (the env repeats the last executed action meanwhile).
    """

    state_noise: float = 0.0
    image_noise: float = 0.0
    image_blur: float = 0.0
    action_noise: float = 0.0
    action_latency: int = 0

    @property
    def active(self) -> bool:
        """Whether any field differs from its nominal zero: derived from the fields, so a
        field a new runtime axis sets is covered without editing this."""
        return any(getattr(self, f.name) for f in fields(self))


def blur_images(images: np.ndarray, sigma: float) -> np.ndarray:
    """(B, H, W, C) uint8 images, each blurred by a Gaussian of std `sigma` pixels over H and
    W (borders mirrored, the kernel cut at 4 sigma), rounded back to uint8."""
    from scipy.ndimage import gaussian_filter

    out = gaussian_filter(images.astype(np.float32), sigma=(0, sigma, sigma, 0), mode="mirror")
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def envelope(noises: Sequence[RuntimeNoise]) -> RuntimeNoise:
    """Each field's largest value over `noises` (what any of them applies)."""
    return RuntimeNoise(
        **{f.name: max(getattr(n, f.name) for n in noises) for f in fields(RuntimeNoise)}
    )


class WorldNoise:
    """The runtime noise of each env (world) of a batch, and the state it carries: each
    env's episode generator and the actions waiting out its latency.

    Every env draws from its own episode's generator only what its own `RuntimeNoise`
    asks for, in the same order as a batch whose envs all share that noise would, so an
    episode's draws (and so its record) do not depend on which other cells share the batch.
    """

    def __init__(self, noise: RuntimeNoise | Sequence[RuntimeNoise] | None, num_envs: int) -> None:
        if noise is None or isinstance(noise, RuntimeNoise):
            noise = [noise or RuntimeNoise()] * num_envs
        if len(noise) != num_envs:
            raise ValueError(f"one RuntimeNoise per env: {num_envs} envs, {len(noise)} given")
        self.per_env = list(noise)
        self.rngs = [np.random.default_rng(0) for _ in range(num_envs)]
        # Actions waiting out the latency: (max latency, B, action dim), oldest first.
        self.pending = np.zeros((0, num_envs, 0))
        # The noisy observation terms last given, by (group, key) (B, ...).
        self.last: dict[tuple[str, str], np.ndarray] = {}

    @property
    def envelope(self) -> RuntimeNoise:
        """Each field's largest value over the envs (what any env applies)."""
        return envelope(self.per_env)

    @property
    def active(self) -> bool:
        return any(n.active for n in self.per_env)

    def std(self, name: str) -> np.ndarray:
        """(B,) each env's value of the field `name`."""
        return np.array([getattr(n, name) for n in self.per_env], dtype=np.float64)

    def set(self, env_ids: Sequence[int] | np.ndarray, noise: Sequence[RuntimeNoise]) -> None:
        """Give the envs `env_ids` these noises (for their next episodes, before reset)."""
        for i, n in zip(env_ids, noise, strict=True):
            self.per_env[int(i)] = n

    def start(
        self, env_ids: np.ndarray, seeds: Sequence[int], hold: Callable[[], np.ndarray]
    ) -> None:
        """Episodes seeded `seeds` start in `env_ids`: their generators, and their latency
        queues filled with `hold()` (B, dim), the action that holds the robot still."""
        if not self.active:
            return  # nothing drawn: no generator made
        for i, s in zip(env_ids, seeds, strict=True):
            self.rngs[int(i)] = episode_rng(int(s), "runtime_noise")
        depth = max(n.action_latency for n in self.per_env)
        if depth:
            held = hold()
            if self.pending.shape[0] < depth or self.pending.shape[2] != held.shape[1]:
                grown = np.zeros((depth, *held.shape))
                if self.pending.shape[2] == held.shape[1]:  # older rows keep their place
                    grown[depth - self.pending.shape[0] :] = self.pending
                self.pending = grown
            self.pending[:, env_ids] = held[env_ids]

    def gauss(self, std: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """The envs whose `std` (B,) is not zero, and (n, *shape) Gaussian noise for them,
        each row drawn from its env's episode generator."""
        rows = np.flatnonzero(std)
        draws = [self.rngs[i].normal(0.0, std[i], size=shape) for i in rows]
        return rows, np.stack(draws) if draws else np.zeros((0, *shape))

    def add(self, values: np.ndarray, std: np.ndarray) -> np.ndarray:
        """`values` (B, ...) with each env's Gaussian noise of std `std` (B,) added (a copy;
        the rows of envs without noise are left as they are)."""
        rows, noise = self.gauss(std, values.shape[1:])
        if not len(rows):
            return values
        out = np.array(values, dtype=np.result_type(values, np.float64))
        out[rows] = values[rows] + noise
        return out

    def actions(self, actions: np.ndarray) -> np.ndarray:
        """(B, dim) actions as each env executes them: action noise on all but the gripper
        component, then each env's latency (the env repeats what it held meanwhile)."""
        if actions.ndim == 2:
            std = self.std("action_noise")
            if std.any():
                actions = actions.copy()
                actions[:, :-1] = self.add(actions[:, :-1], std)
        depth = self.pending.shape[0]
        if depth and actions.shape == self.pending.shape[1:]:
            queue = np.concatenate([self.pending, actions[None]], axis=0)
            lag = np.array([n.action_latency for n in self.per_env])
            self.pending = queue[1:]
            return queue[depth - lag, np.arange(len(lag))]
        return actions

    def observations(
        self,
        groups: dict[str, dict[str, np.ndarray]],
        noisy: Sequence[tuple[str, str]],
        fresh: np.ndarray | None = None,
    ) -> None:
        """State noise on the terms `noisy` ((group, key) pairs), then image blur and pixel
        noise on the policy group's camera images, in place. `fresh`: only these envs
        (those just reset) draw; the others keep the observation they were last given, so
        an episode's draws never depend on when the episodes of other envs start."""
        keep = np.ones(len(self.per_env), bool)
        keep[np.arange(len(keep)) if fresh is None else fresh] = False
        std = self.std("state_noise") * ~keep
        touched = list(noisy) if self.std("state_noise").any() else []
        for group, key in noisy if std.any() else ():
            groups[group][key] = self.add(groups[group][key], std)
        self._images(groups["policy"], keep, touched)
        if keep.any() and self.last:  # the envs that did not start an episode: as they were
            for group, key in [t for t in touched if t in self.last]:
                groups[group][key] = np.array(groups[group][key])
                groups[group][key][keep] = self.last[(group, key)][keep]
        self.last = {(g, k): np.array(groups[g][k]) for g, k in touched}

    def _images(
        self, policy: dict[str, np.ndarray], keep: np.ndarray, touched: list[tuple[str, str]]
    ) -> None:
        """Blur, then pixel noise, on the camera images of the envs not in `keep`."""
        blur, pixel = self.std("image_blur"), self.std("image_noise")
        if not (blur.any() or pixel.any()):
            return
        touched += [("policy", k) for k in policy if k.endswith("_rgb")]
        blur, pixel = blur * ~keep, pixel * ~keep
        for key in [k for k in policy if k.endswith("_rgb")]:
            images = np.array(policy[key])
            for sigma in np.unique(blur[blur > 0]):
                rows = np.flatnonzero(blur == sigma)
                images[rows] = blur_images(images[rows], float(sigma))
            rows, noise = self.gauss(pixel, images.shape[1:])
            if len(rows):
                images[rows] = np.clip(images[rows] + noise, 0, 255).astype(np.uint8)
            policy[key] = images
