"""Adapter kinds: `openpi` (websocket server), `http` (OpenVLA's POST /act), `python`.

    metasim eval policy=openpi policy.port=8000          # a running openpi server
    metasim eval policy=openvla_http policy.url=http://127.0.0.1:8000
    metasim eval policy=python policy.target=my_pkg.my_mod:MyPolicy

Each takes the common adapter options (observation spec, action convention, timeouts,
retries: see adapter.py) plus its own.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any

import numpy as np
from pydantic import Field

from metasim.errors import MetasimInputError
from metasim.policies.adapter import AdapterOptions, AdapterPolicy
from metasim.policies.base import PolicyContext, code_field, register_policy


class OpenpiOptions(AdapterOptions):
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    api_key: str | None = None
    connect_timeout_s: float = Field(default=10.0, gt=0)
    # openpi has no reset message: a fresh connection per episode gives a stateful server
    # a clean session (what metasim serve does); `keep` uses one connection throughout.
    session: str = Field(default="per_episode", pattern="^(per_episode|keep)$")


class OpenpiPolicy(AdapterPolicy):
    """One openpi websocket connection per env; requests fanned out in parallel."""

    def __init__(self, ctx: PolicyContext, opts: OpenpiOptions) -> None:
        super().__init__(ctx, opts)
        self.o = opts
        self.clients: dict[int, Any] = {}
        self.lock = threading.Lock()
        self.metadata: dict[str, Any] | None = None

    def _client(self, env: int) -> tuple[Any, bool]:
        """The env's connection, and whether it is new (a fresh server-side session)."""
        from metasim.policies.transport.openpi import OpenpiClient

        client = self.clients.get(env)
        new = client is None
        if client is None:
            client = OpenpiClient(
                self.o.host,
                self.o.port,
                api_key=self.o.api_key,
                timeout=self.o.timeout_s,
                connect_timeout=self.o.connect_timeout_s,
            )
            self.clients[env] = client
            with self.lock:
                if self.metadata is None:
                    self.metadata = dict(client.metadata or {})
        return client, new

    def infer_one(self, env: int, request: dict[str, Any]) -> np.ndarray:
        from metasim.policies.transport.errors import check_actions

        client, new = self._client(env)
        if new and self.opts.observation.raw:  # a new session learns the scene first
            request = {**request, "metasim/scene": self.scene_text, "metasim/reset": True}
        drop = self.opts.extra_dims == "drop"
        return check_actions(client.infer(request), self.dim, drop_extra=drop)

    def _drop(self, env: int) -> None:
        client = self.clients.pop(env, None)
        if client is not None:
            try:
                client.close()
            except Exception:
                pass

    def reset_env(self, env: int) -> None:
        if self.o.session == "per_episode":
            self._drop(env)

    def recover(self, env: int) -> None:
        self._drop(env)

    def close(self) -> None:
        for env in list(self.clients):
            self._drop(env)
        super().close()


class HttpOptions(AdapterOptions):
    url: str = "http://127.0.0.1:8000"
    api_key: str | None = None
    unnorm_key: str | None = None  # OpenVLA's dataset statistics key


class HttpPolicy(AdapterPolicy):
    """OpenVLA's deploy server: `POST /act` with the image and instruction, one action."""

    def __init__(self, ctx: PolicyContext, opts: HttpOptions) -> None:
        super().__init__(ctx, opts)
        from metasim.policies.transport.http_json import HttpActClient

        self.client = HttpActClient(opts.url, api_key=opts.api_key, timeout=opts.timeout_s)
        self.unnorm_key = opts.unnorm_key

    def infer_one(self, env: int, request: dict[str, Any]) -> np.ndarray:
        if self.unnorm_key is not None:
            request = {**request, "unnorm_key": self.unnorm_key}
        return np.asarray(self.client.act(request))


class PythonOptions(AdapterOptions):
    target: str = code_field()  # "package.module:Class"
    args: dict[str, Any] = Field(default_factory=dict)


class PythonPolicy(AdapterPolicy):
    """Any object with openpi's policy interface, built in-process from `module:Class`:
    `infer(obs: dict) -> {"actions": (H, D)}` and optionally `reset()`. With a class
    attribute `batched = True` it takes the batch dict ((B, ...) arrays) and returns
    (B, H, D) actions; with `device_images = True` too, its images are torch tensors on
    the device of `backend=warp render=warp` (host arrays elsewhere), and its actions may
    be a torch tensor on any device."""

    def __init__(self, ctx: PolicyContext, opts: PythonOptions) -> None:
        super().__init__(ctx, opts)
        cls = load_target(opts.target)
        self.batched = bool(getattr(cls, "batched", False))
        # `device_images = True` (with batched): images as torch tensors on the device
        # where the physics and the rig share one (metasim.envs.device_images)
        self.device_images = self.batched and bool(getattr(cls, "device_images", False))
        n = 1 if self.batched else ctx.num_envs
        # one instance per env when unbatched: each keeps its own episode state
        self.objs = [_instance(cls, opts) for _ in range(n)]

    def infer_one(self, env: int, request: dict[str, Any]) -> np.ndarray:
        out = self.objs[env].infer(request)
        return _host(out["actions"] if isinstance(out, dict) else out)

    def infer_batch(self, env_ids: np.ndarray, batch: dict[str, Any]) -> np.ndarray:
        out = self.objs[0].infer(batch)
        return _host(out["actions"] if isinstance(out, dict) else out)

    def reset_env(self, env: int) -> None:
        obj = self.objs[0 if self.batched else env]
        if hasattr(obj, "reset"):
            obj.reset()


def _host(actions: Any) -> np.ndarray:
    """Actions as NumPy (a torch tensor copied from its device: B x H x D numbers)."""
    if hasattr(actions, "detach"):
        return np.asarray(actions.detach().cpu().numpy())
    return np.asarray(actions)


def _instance(cls: Any, opts: PythonOptions) -> Any:
    """`cls(**policy.args)`, which must have an `infer` method; else an input error."""
    bad = f"policy.target: {opts.target!r}"
    if not callable(cls):
        raise MetasimInputError("policy config", [f"{bad} is a {type(cls).__name__}, not a class"])
    try:
        obj = cls(**opts.args)
    except TypeError as exc:
        raise MetasimInputError("policy config", [f"{bad} with policy.args: {exc}"]) from None
    if not callable(getattr(obj, "infer", None)):
        raise MetasimInputError("policy config", [f"{bad} builds an object with no infer(obs)"])
    return obj


def load_target(target: str) -> Any:
    """`package.module:Name` to the object it names (a clear error if it does not exist)."""
    module, _, name = target.partition(":")
    if not module or not name:
        raise MetasimInputError(
            "policy config", [f"policy.target: expected 'package.module:Class', got {target!r}"]
        )
    try:
        obj: Any = importlib.import_module(module)
        for part in name.split("."):
            obj = getattr(obj, part)
    except Exception as exc:
        raise MetasimInputError(
            "policy config",
            [f"policy.target: cannot load {target!r}: {type(exc).__name__}: {exc}"],
        ) from None
    return obj


@register_policy("openpi", options=OpenpiOptions, client=True)
def _openpi(ctx: PolicyContext) -> OpenpiPolicy:
    return OpenpiPolicy(ctx, ctx.typed(OpenpiOptions))


@register_policy("http", options=HttpOptions, client=True)
def _http(ctx: PolicyContext) -> HttpPolicy:
    return HttpPolicy(ctx, ctx.typed(HttpOptions))


@register_policy("python", options=PythonOptions)
def _python(ctx: PolicyContext) -> PythonPolicy:
    return PythonPolicy(ctx, ctx.typed(PythonOptions))
