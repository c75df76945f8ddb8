"""`episodes=` is bounded (exit 2 before any folder is written) and the run is planned
lazily: the memory a run takes before its first episode ends does not grow with the
episode count."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from metasim.cli.main import main
from metasim.evaluate.config import MAX_EPISODES, compose
from metasim.evaluate.rollout import EpisodeRecord
from metasim.evaluate.runner import run_eval
from metasim.evaluate.store import RunStore


@pytest.mark.parametrize("episodes", ["99999999999999999999", "10000000"])
def test_huge_episode_count_exits_2_before_any_folder(tmp_path: Path, capsys, episodes):
    out = tmp_path / "run"
    assert main(["eval", "--quiet", f"episodes={episodes}", f"out={out}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: command line: episodes: ") and "Traceback" not in err
    assert f"less than or equal to {MAX_EPISODES}" in err and episodes in err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists() and list(tmp_path.iterdir()) == []


class _FirstEpisode(Exception):
    """Injected fault: stop the run once its first episode is stored."""


def _peak_until_first_episode(episodes: int, out: Path, monkeypatch) -> int:
    """Peak bytes Python allocated from composing the config to storing episode one."""
    append = RunStore.append

    def stop_after_first(store: RunStore, record: EpisodeRecord) -> None:
        append(store, record)
        raise _FirstEpisode

    monkeypatch.setattr(RunStore, "append", stop_after_first)
    tracemalloc.start()
    try:
        cfg = compose(["suite.tasks=[lift_cube]", f"episodes={episodes}", "num_envs=2"])
        cfg.out = str(out)
        with pytest.raises(_FirstEpisode):
            run_eval(cfg)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_memory_before_work_does_not_grow_with_episodes(tmp_path: Path, monkeypatch):
    small = _peak_until_first_episode(4, tmp_path / "small", monkeypatch)
    large = _peak_until_first_episode(MAX_EPISODES, tmp_path / "large", monkeypatch)
    # Planning a million episodes eagerly takes > 40 MB of lists and tuples of ints.
    print(
        f"peak Python allocations: 4 episodes {small / 1e6:.1f} MB, "
        f"{MAX_EPISODES} episodes {large / 1e6:.1f} MB"
    )
    assert large - small < 2_000_000, (small, large)
