"""Serve any metasim policy over the openpi websocket protocol (`metasim serve`).

One connection is one env: its session builds the policy for the scene the client sends
with the first request of an episode (`metasim/scene`, the scene as JSON, which
metasim's openpi adapter sends when its observation spec says `raw: true`), resets it
when a request carries `metasim/reset`, and answers each observation (the env's groups
flattened as `metasim/policy/<key>` and `metasim/privileged/<key>`) with the policy's
action chunk `{"actions": (H, D)}`. Compiled scenes are cached across sessions.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import numpy as np

from metasim.paths import ASSETS
from metasim.policies.base import Policy, PolicyContext, PolicyOptions, make_policy, policy_kind
from metasim.policies.network_scene import network_scene
from metasim.scene.compile import CompiledScene, compile_scene
from metasim.scene.schema import Scene

PROTOCOL = "metasim-raw-1"  # what the metadata frame says the server expects


class SceneCache:
    """Compiled scenes keyed by the client's scene text, least recently used evicted
    beyond `capacity`; a scene that fails to compile is never stored. Scenes come from
    the network: the files they name must lie in `root`, the package's assets folder, or
    in an installed benchmark's asset folders (metasim.policies.network_scene).

    Compiles run outside the cache's lock, so one client's big scene never holds up
    another's; two requests for the same scene at once share one compile."""

    def __init__(
        self, capacity: int = 16, root: Path = ASSETS, roots: Sequence[Path] | None = None
    ) -> None:
        self._lock = threading.Lock()
        self.capacity, self.root = capacity, root
        self.roots = roots  # the benchmarks' asset folders (None: every task source's)
        self._scenes: OrderedDict[str, CompiledScene] = OrderedDict()
        self._building: dict[str, Future[CompiledScene]] = {}

    def __len__(self) -> int:
        return len(self._scenes)

    def get(self, text: str) -> CompiledScene:
        key = hashlib.sha256(text.encode()).hexdigest()
        with self._lock:
            if key in self._scenes:
                self._scenes.move_to_end(key)
                return self._scenes[key]
            building = self._building.get(key)
            if building is None:
                future: Future[CompiledScene] = Future()
                self._building[key] = future
        if building is not None:
            return building.result()  # the same scene, compiled by another session
        try:
            compiled = self._compile(text)
        except BaseException as exc:
            with self._lock:
                del self._building[key]
            future.set_exception(exc)
            raise
        with self._lock:
            del self._building[key]
            self._scenes[key] = compiled
            while len(self._scenes) > self.capacity:
                self._scenes.popitem(last=False)
        future.set_result(compiled)
        return compiled

    def _compile(self, text: str) -> CompiledScene:
        scene = network_scene(Scene.model_validate_json(text), self.root, self.roots)
        return compile_scene(scene, base_dir=self.root)


class MetasimSession:
    """The server side of one connection: a metasim policy driving one env."""

    def __init__(
        self,
        kind: str = "scripted",
        options: PolicyOptions | None = None,
        scenes: SceneCache | None = None,
    ) -> None:
        """A session of policy `kind` with its typed `options` (None: the kind's defaults);
        the env's action space is the one its action convention declares."""
        self.kind = kind
        self.options = options if options is not None else policy_kind(kind).options()
        self.action_space = self.options.actions.env_space
        self.scenes = scenes or SceneCache()
        self.policy: Policy | None = None
        self.scene_text: str | None = None

    def reset(self) -> None:
        """Nothing to do: the next request carries `metasim/reset`."""

    def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
        text = obs.get("metasim/scene")
        prompt = str(obs.get("prompt", ""))
        if text is not None and (self.policy is None or text != self.scene_text):
            compiled = self.scenes.get(str(text))
            ctx = PolicyContext.of(compiled, 1, self.action_space, self.options)
            self.policy = make_policy(self.kind, ctx)
            self.scene_text = str(text)
            self.policy.reset(prompt or compiled.scene.task.instruction)
        elif obs.get("metasim/reset") and self.policy is not None:
            self.policy.reset(prompt)
        if self.policy is None:
            raise ValueError(
                "the first request of a session must carry 'metasim/scene' (the scene as "
                "JSON): point metasim's openpi adapter at this server with "
                "observation.raw=true (policies/metasim_remote.yaml)"
            )
        groups: dict[str, dict[str, np.ndarray]] = {"policy": {}, "privileged": {}}
        for key, value in obs.items():
            parts = key.split("/")
            if len(parts) == 3 and parts[0] == "metasim" and parts[1] in groups:
                groups[parts[1]][parts[2]] = np.asarray(value)[None]
        chunk = np.asarray(self.policy.act(groups), dtype=np.float64)
        return {"actions": chunk[0]}


def session_factory(kind: str, options: PolicyOptions) -> Callable[[], MetasimSession]:
    """A new session per connection, all of policy `kind` with its typed `options`, over
    one scene cache (`metasim serve` takes both from the rollout spec `compose` builds, as
    `metasim eval` does)."""
    scenes = SceneCache()
    return lambda: MetasimSession(kind, options, scenes)
