"""Every robosuite task's compiled model against robosuite's own MjModel: every
difference is listed (`metasim robosuite modeldiff`)."""

from __future__ import annotations

import pytest

from metasim.robosuite.checks.modeldiff import diff_task
from metasim.robosuite.reference.simulator import RobosuiteRef
from metasim.robosuite.tasks import TASKS

pytestmark = pytest.mark.reference


@pytest.mark.parametrize("task", list(TASKS))
def test_no_unlisted_difference(ref: RobosuiteRef, task: str) -> None:
    row = diff_task(ref, task)
    assert row["values"] > 5000 and row["fields"] > 300
    assert row["unlisted"] == [], row["unlisted"][:5]
