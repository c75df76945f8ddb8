"""Videos of sampled episodes: replay them deterministically with a camera and encode
H.264 MP4 (imageio-ffmpeg), returned as data URIs for the self-contained report.

Episode k of a cell always starts from `episode_seed(seed, k)` and the cell's factors
are recorded on every row, so re-running the row's task, cell and episode with the run's
policy reproduces it; each clip says whether the replay matched the recorded outcome.
"""

from __future__ import annotations

import base64
import dataclasses
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from metasim.report.data import Episode, Run

WIDTH, HEIGHT, EVERY = 192, 144, 2  # small frames, every 2nd control step


@dataclass(frozen=True)
class Clip:
    """One replayed episode; `uri` is an MP4 data URI, or "" with the reason in `note`."""

    episode: Episode
    replay_success: bool | None
    uri: str
    note: str = ""


def sample_episodes(run: Run, n: int, seed: int = 0) -> list[Episode]:
    """Up to n failures and n successes drawn without replacement (reproducibly)."""
    rng = np.random.default_rng(seed)
    out: list[Episode] = []
    for outcome in (False, True):
        pool = [e for e in run.episodes if e.success is outcome]
        if pool:
            pick = rng.choice(len(pool), size=min(n, len(pool)), replace=False)
            out.extend(pool[int(i)] for i in sorted(pick))
    return out


def replay_refusal(run: Run, allow_code: Sequence[str] = ()) -> str:
    """Why the run's episodes must not be replayed here, or "": its policy config (from
    its summary.json, a file anyone may have written) names code to import and run that
    `allow_code` (`--allow-code`) does not name. Nothing is imported to find out."""
    from metasim.evaluate.config import EvalConfig
    from metasim.policies.base import code_refusal

    try:
        cfg = EvalConfig.model_validate({**run.config, "out": None})
    except Exception:  # a config that does not validate cannot be replayed either:
        return ""  # each clip notes why its replay failed
    source = str(run.path / "summary.json")
    return code_refusal(cfg.rollout.options, allow_code, source, "--allow-code")


def make_clips(run: Run, n: int, allow_code: Sequence[str] = ()) -> list[Clip]:
    """Replay and encode the sampled episodes; a replay that fails gives a note, not a
    crash (the rest of the report is still written). None when `replay_refusal` says
    the run's policy must not be built."""
    if replay_refusal(run, allow_code):
        return []
    clips = []
    plans: list[Any] = []  # the run's plan, made once at the first replay
    for ep in sample_episodes(run, n):
        try:
            frames, success, fps = replay(run, ep, plans)
            clips.append(Clip(ep, success, encode_mp4(frames, fps)))
        except Exception as exc:  # a broken replay must not lose the whole report
            clips.append(Clip(ep, None, "", f"replay failed: {type(exc).__name__}: {exc}"))
    return clips


def world_camera(compiled: Any) -> str:
    """The scene's first world camera (else the model's first camera)."""
    for cam in compiled.scene.cameras:
        if cam.mount == "world":
            return str(cam.name)
    return str(compiled.model.camera(0).name)


def replay(
    run: Run, ep: Episode, plans: list[Any] | None = None
) -> tuple[list[np.ndarray], bool, float]:
    """Frames (H, W, 3) uint8 of episode `ep`, its replayed success, and the video fps.

    The episode runs again through the evaluation loop itself (same seed, cell, policy
    config, chunking and action conventions; the task and cell from the run's plan, as
    `metasim eval` made them), filmed from the scene's world camera. `plans` caches the
    run's plan across the replays of one report (empty: made here and appended).
    """
    from metasim.evaluate.config import EvalConfig
    from metasim.evaluate.executors import run_shard
    from metasim.evaluate.hooks import Hooks
    from metasim.evaluate.plan import Plan

    cfg = EvalConfig.model_validate({**run.config, "out": None})
    plans = [] if plans is None else plans
    if not plans:
        plans.append(Plan.of(cfg))
    item = plans[0].item(ep.task, ep.cell, ep.factors)
    spec = dataclasses.replace(cfg.rollout, num_envs=1, threads=cfg.threads)
    shard = item.shard((ep.episode,), spec)
    frames: list[np.ndarray] = []
    envs: list[Any] = []
    cams: list[str] = []
    steps = [0]
    last: list[np.ndarray] = []

    class Film(Hooks):
        def on_step(self) -> None:
            steps[0] += 1
            frame = np.asarray(envs[0].handler.render(cams[0], [0], WIDTH, HEIGHT)[0], np.uint8)
            if steps[0] % EVERY == 1 or EVERY == 1:
                frames.append(frame)
                last.clear()
            else:
                last[:] = [frame]  # kept so the video ends on the episode's last step

        def on_env(self, env: Any) -> None:
            envs.append(env)
            cams.append(world_camera(env.compiled))

    records = list(run_shard(shard, Film()))
    control_dt = envs[0].compiled.control_dt if envs else 1.0
    return (
        frames + last,
        bool(records and records[0].success),
        1.0 / (EVERY * control_dt),
    )


def encode_mp4(frames: list[np.ndarray], fps: float) -> str:
    """H.264 (yuv420p, faststart) MP4 of (H, W, 3) uint8 frames as a data URI."""
    import imageio_ffmpeg

    h, w = frames[0].shape[:2]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "clip.mp4"
        writer = imageio_ffmpeg.write_frames(
            str(path),
            (w, h),
            fps=fps,
            codec="libx264",
            pix_fmt_in="rgb24",
            pix_fmt_out="yuv420p",
            macro_block_size=16,
            output_params=["-movflags", "+faststart", "-crf", "28"],
            ffmpeg_log_level="error",
        )
        writer.send(None)
        for f in frames:
            writer.send(np.ascontiguousarray(f))
        writer.close()
        data = path.read_bytes()
    return "data:video/mp4;base64," + base64.b64encode(data).decode("ascii")
