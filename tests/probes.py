"""The stopping rule of the `policy=python` test classes: a batched policy that ends its
episode with a recorded error after a set number of requests, so a test runs a few
control steps of a real `metasim eval` and reads what the policy saw."""

from __future__ import annotations


class Capped:
    """Counts requests per episode; the request after `limit` raises `RuntimeError(done)`,
    which the evaluator records as the episode's error."""

    batched = True
    limit = 1
    done = "probe done"

    def __init__(self) -> None:
        self.calls = 0

    def reset(self) -> None:
        self.calls = 0

    def count(self) -> None:
        """Call first in `infer`: stops the episode once `limit` requests were answered."""
        if self.calls >= self.limit:
            raise RuntimeError(self.done)
        self.calls += 1
