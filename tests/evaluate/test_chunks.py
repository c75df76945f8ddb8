"""The chunk queue alone (`metasim.evaluate.chunks`): execute k of a chunk, NaN padding and
NaN faults, policy failures, wrong shapes and temporal ensembling, with a stub policy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from metasim.evaluate.chunks import ChunkQueue
from metasim.evaluate.policy_io import converter_for
from metasim.policies.base import PolicyFailure
from metasim.policies.conventions import ActionConvention, ActionConverter
from metasim.scene.compile import CompiledScene


class Stub:
    """Returns the queued chunks in turn (or raises a queued exception); logs each call."""

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.calls: list[list[int]] = []
        self.resets: list[Any] = []

    def reset(self, instruction: str, env_ids: np.ndarray | None = None) -> None:
        self.resets.append(None if env_ids is None else list(env_ids))

    def act(self, obs: dict[str, Any], env_ids: np.ndarray | None = None) -> np.ndarray:
        self.calls.append([] if env_ids is None else [int(i) for i in env_ids])
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


@pytest.fixture
def convert(lift_scene: CompiledScene) -> ActionConverter:
    return converter_for(lift_scene, ActionConvention())


def chunk(n: int, h: int, dim: int, start: float = 0.0) -> np.ndarray:
    """(n, h, dim): row t of slot i holds start + 10 i + t."""
    values = start + 10 * np.arange(n)[:, None] + np.arange(h)[None, :]
    return np.repeat(values[:, :, None], dim, axis=2).astype(np.float64)


def test_each_slot_executes_k_actions_of_its_chunk_then_asks_again(convert) -> None:
    dim = convert.dim
    policy = Stub(chunk(2, 3, dim), chunk(2, 3, dim, 100.0))
    q = ChunkQueue(policy, 2, convert, execute=2)  # type: ignore[arg-type]
    both = np.ones(2, dtype=bool)
    seen = []
    for _ in range(4):
        assert q.refill({}, both) == {}
        seen.append(q.actions()[:, 0].tolist())
        q.advance(both)
    assert seen == [[0, 10], [1, 11], [100, 110], [101, 111]]
    assert policy.calls == [[0, 1], [0, 1]]


def test_trailing_nan_rows_pad_and_any_other_nan_fails_the_slot(convert) -> None:
    dim = convert.dim
    fresh = chunk(3, 3, dim)
    fresh[0, 2:] = np.nan  # padding: slot 0 runs 2 actions
    fresh[1, 0, 1] = np.nan  # inside: slot 1 fails
    q = ChunkQueue(Stub(fresh), 3, convert)  # type: ignore[arg-type]
    failed = q.refill({}, np.ones(3, dtype=bool))
    assert failed == {1: "invalid action: actions contain NaN or inf"}
    assert q.length.tolist() == [2, 0, 3]


def test_a_policy_failure_fails_its_slots_and_keeps_the_others_chunks(convert) -> None:
    dim = convert.dim
    q = ChunkQueue(Stub(PolicyFailure(chunk(2, 2, dim), {1: "timeout"})), 2, convert)  # type: ignore[arg-type]
    assert q.refill({}, np.ones(2, dtype=bool)) == {1: "policy error: timeout"}
    assert q.actions()[0, 0] == 0.0 and q.length.tolist() == [2, 0]


def test_a_wrong_shape_or_an_exception_fails_every_asked_slot(convert) -> None:
    dim = convert.dim
    policy = Stub(np.zeros((2, 1, dim + 1)), RuntimeError("gone"))
    q = ChunkQueue(policy, 2, convert)  # type: ignore[arg-type]
    only_1 = np.array([False, True])
    failed = q.refill({}, only_1)
    assert list(failed) == [1] and "act() must return (B=2, H, " in failed[1]
    assert q.refill({}, only_1) == {1: "policy error: RuntimeError: gone"}
    assert policy.calls == [[1], [1]]


def test_ensembling_executes_the_weighted_mean_of_every_prediction(convert) -> None:
    dim = convert.dim
    k = 0.5
    first, second = chunk(1, 2, dim), chunk(1, 2, dim, 4.0)  # steps t, t+1 / t+1, t+2
    q = ChunkQueue(Stub(first, second), 1, convert, ensemble=k)  # type: ignore[arg-type]
    one = np.ones(1, dtype=bool)
    q.refill({}, one)
    assert q.actions()[0, 0] == 0.0  # one prediction for step t
    q.advance(one)
    q.refill({}, one)  # step t+1: first's row 1 (age 1) and second's row 0 (age 0)
    w_old, w_new = np.exp(k * 1), np.exp(k * 0)
    want = (w_old * 1.0 + w_new * 4.0) / (w_old + w_new)
    assert q.actions()[0, 0] == pytest.approx(want)


def test_ensembling_before_any_prediction_gives_zeros(convert) -> None:
    """Every slot settling at the first step: no chunk was asked for yet."""
    q = ChunkQueue(Stub(), 2, convert, ensemble=0.1)  # type: ignore[arg-type]
    assert q.refill({}, np.zeros(2, dtype=bool)) == {}
    assert np.array_equal(q.actions(), np.zeros((2, convert.dim)))


def test_a_started_slot_drops_its_chunk_and_resets_the_policy_for_it(convert) -> None:
    dim = convert.dim
    policy = Stub(chunk(2, 3, dim), chunk(2, 3, dim, 50.0))
    q = ChunkQueue(policy, 2, convert)  # type: ignore[arg-type]
    q.start("lift")
    both = np.ones(2, dtype=bool)
    q.refill({}, both)
    q.advance(both)
    q.start("lift", np.array([1]))
    q.refill({}, both)
    assert policy.resets == [None, [1]] and policy.calls == [[0, 1], [1]]
    assert q.actions()[:, 0].tolist() == [1.0, 60.0]
