"""What dropping a splat file's higher-order colour coefficients costs: the PSNR of each
splat's degree-0 colour (what metasim's warp rig draws: MuJoCo Warp's splats have no
view dependence) against its full degree-3 spherical-harmonic colour, over random view
directions, on synthetic splat sets whose degree-1..3 coefficients have standard
deviation `--sigma` (the f_dc ones 1.0). One splat colour per pixel, so it is the image
PSNR where splats do not overlap; overlapping splats blend these same colours.

    PYTHONPATH=. python bench/splat_sh.py --sigma 0.01 0.03 0.1 0.3

Prints one JSON line per sigma: PSNR (dB, peak 1) and the mean absolute error (0-255).
"""

from __future__ import annotations

import argparse
import json

import numpy as np

C0 = 0.28209479177387814
C1 = 0.4886025119029199
C2 = (1.0925484305920792, -1.0925484305920792, 0.31539156525252005, -1.0925484305920792,
      0.5462742152960396)  # fmt: skip
C3 = (-0.5900435899266435, 2.890611442640554, -0.4570457994644658, 0.3731763325901154,
      -0.4570457994644658, 1.445305721320277, -0.5900435899266435)  # fmt: skip


def basis(d: np.ndarray) -> np.ndarray:
    """(V, 16) real SH basis of degree <= 3 at unit directions d (V, 3), the 3DGS signs."""
    x, y, z = d[:, 0], d[:, 1], d[:, 2]
    xx, yy, zz = x * x, y * y, z * z
    cols = [
        np.full_like(x, C0),
        -C1 * y, C1 * z, -C1 * x,
        C2[0] * x * y, C2[1] * y * z, C2[2] * (2 * zz - xx - yy), C2[3] * x * z,
        C2[4] * (xx - yy),
        C3[0] * y * (3 * xx - yy), C3[1] * x * y * z, C3[2] * y * (4 * zz - xx - yy),
        C3[3] * z * (2 * zz - 3 * xx - 3 * yy), C3[4] * x * (4 * zz - xx - yy),
        C3[5] * z * (xx - yy), C3[6] * x * (xx - 3 * yy),
    ]  # fmt: skip
    return np.stack(cols, axis=1)


def measure(sigma: float, splats: int, views: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    coef = rng.normal(0.0, sigma, (splats, 16, 3))  # per splat, coefficient, channel
    coef[:, 0] = rng.normal(0.0, 1.0, (splats, 3))
    d = rng.normal(size=(views, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    b = basis(d)  # (V, 16)
    full = np.clip(np.einsum("vk,nkc->vnc", b, coef) + 0.5, 0, 1)
    dc = np.clip(C0 * coef[:, 0] + 0.5, 0, 1)[None]  # what the reader keeps
    err = full - dc
    mse = float(np.mean(err**2))
    return {
        "sigma": sigma,
        "psnr_db": round(10 * np.log10(1.0 / mse), 2) if mse > 0 else float("inf"),
        "mae_255": round(float(np.mean(np.abs(err))) * 255, 2),
        "sh_rest_dropped": 45,
        "splats": splats,
        "views": views,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sigma", type=float, nargs="+", default=[0.01, 0.03, 0.1, 0.3])
    ap.add_argument("--splats", type=int, default=4096)
    ap.add_argument("--views", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    for s in a.sigma:
        print(json.dumps(measure(s, a.splats, a.views, a.seed)))


if __name__ == "__main__":
    main()
