"""The shared image measures (`metasim.reference.images`), and the parity checks' capped
PSNR built on them."""

from __future__ import annotations

import numpy as np

from metasim.reference.images import mae, psnr


def test_psnr_and_mae_of_a_known_difference() -> None:
    a = np.zeros((2, 4, 4, 3), dtype=np.uint8)
    b = a.copy()
    b[0, 0, 0, 0] = 255  # one value off by the peak: MSE = 255² / 96
    assert np.isclose(psnr(a, b), 10 * np.log10(96))
    assert np.isclose(mae(a, b), 255 / 96)
    assert psnr(a, a) == float("inf") and psnr(a, a, cap=100.0) == 100.0
    assert psnr(a, b, cap=5.0) == 5.0  # a cap bounds any value
    assert psnr(a, b.astype(np.uint8)) == psnr(b, a)  # no uint8 wrap-around


def test_the_parity_checks_report_the_capped_figure() -> None:
    from metasim.reference.parity import PSNR_CAP

    a = np.full((8, 8, 3), 7, dtype=np.uint8)
    assert psnr(a, a, cap=PSNR_CAP) == PSNR_CAP
    b = a.copy()
    b[0, 0] = 9
    assert psnr(a, b, cap=PSNR_CAP) == psnr(a, b)  # a real difference is below the cap
