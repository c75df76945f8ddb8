"""Perturbations the env applies while stepping (the runtime axes of a perturbation grid)."""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class RuntimeNoise:
    """Perturbations applied while stepping, drawn per episode from its seed.

    state_noise: std of Gaussian noise on proprioception and object poses (m, rad);
    image_noise: std of Gaussian pixel noise (0-255 scale); action_noise: std added to
    each action component; action_latency: control steps between a policy's action and
    its execution (the env repeats the last executed action meanwhile).
    """

    state_noise: float = 0.0
    image_noise: float = 0.0
    action_noise: float = 0.0
    action_latency: int = 0

    @property
    def active(self) -> bool:
        """Whether any field differs from its nominal zero: derived from the fields, so a
        field a new runtime axis sets is covered without editing this."""
        return any(getattr(self, f.name) for f in fields(self))
