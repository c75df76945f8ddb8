"""The CPU splat rasterizer (`metasim.recon.splat_raster`) against images computed by
hand from the 3DGS image model, and its gradients against finite differences."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from metasim.recon.camera import Intrinsics  # noqa: E402
from metasim.recon.splat_raster import (  # noqa: E402
    ALPHA_MIN,
    DILATION,
    Camera,
    Gaussians,
    quat_to_rotmat,
    render,
)

F, W, H = 50.0, 32, 24
CX, CY = (W - 1) / 2, (H - 1) / 2


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _camera(dtype=torch.float32) -> Camera:
    return Camera(torch.eye(4, dtype=dtype), Intrinsics(F, F, CX, CY, W, H))


def _gaussians(means, scales, colours, opacities, quats=None, dtype=torch.float32) -> Gaussians:
    n = len(means)
    q = [[1.0, 0.0, 0.0, 0.0]] * n if quats is None else quats
    col = torch.tensor(colours, dtype=dtype)
    op = torch.tensor(opacities, dtype=dtype)
    return Gaussians(
        torch.tensor(means, dtype=dtype),
        torch.tensor(q, dtype=dtype),
        torch.log(torch.tensor(scales, dtype=dtype)),
        torch.log(col / (1 - col)),
        torch.log(op / (1 - op)),
    )


def _by_hand(mean, scale, opacity) -> np.ndarray:
    """(H, W) alpha of one axis-aligned Gaussian: the EWA footprint written out."""
    x, y, z = mean
    sx, sy, sz = scale
    # J Sigma J^T with J = [[f/z, 0, -f x/z^2], [0, f/z, -f y/z^2]], Sigma diagonal.
    a = F**2 / z**2 * (sx**2 + (x / z) ** 2 * sz**2) + DILATION
    b = F**2 / z**2 * (x * y / z**2) * sz**2
    c = F**2 / z**2 * (sy**2 + (y / z) ** 2 * sz**2) + DILATION
    u, v = F * x / z + CX, F * y / z + CY
    ys, xs = np.mgrid[0:H, 0:W].astype(float)
    dx, dy = xs - u, ys - v
    det = a * c - b * b
    power = -0.5 * (c * dx * dx - 2 * b * dx * dy + a * dy * dy) / det
    alpha = np.minimum(0.99, opacity * np.exp(power))
    return np.where(alpha >= ALPHA_MIN, alpha, 0.0)


def test_one_gaussian_lands_where_projected_with_its_footprint():
    mean, scale, colour, opacity = (0.05, -0.03, 1.0), (0.03, 0.015, 0.02), (0.9, 0.2, 0.4), 0.8
    img = render(_gaussians([mean], [scale], [colour], [opacity]), _camera()).numpy()
    expected = _by_hand(mean, scale, opacity)[..., None] * np.array(colour)
    np.testing.assert_allclose(img, expected, atol=2e-6)
    # The brightest pixel is the projected centre (f x / z + cx, f y / z + cy) rounded.
    v, u = np.unravel_index(np.argmax(img[..., 0]), img.shape[:2])
    assert (u, v) == (round(F * 0.05 + CX), round(-F * 0.03 + CY)) == (18, 10)


def test_a_rotated_gaussian_turns_its_footprint():
    """A quarter turn about the optical axis swaps the footprint's axes."""
    quarter = [[math.cos(math.pi / 4), 0.0, 0.0, math.sin(math.pi / 4)]]
    g = _gaussians([(0.0, 0.0, 1.0)], [(0.04, 0.01, 0.01)], [(0.5, 0.5, 0.5)], [0.9], quarter)
    img = render(g, _camera()).numpy()[..., 0]
    expected = _by_hand((0.0, 0.0, 1.0), (0.01, 0.04, 0.01), 0.9) * 0.5
    np.testing.assert_allclose(img, expected, atol=2e-6)
    rot = quat_to_rotmat(torch.tensor(quarter))[0].numpy()
    np.testing.assert_allclose(rot @ [1, 0, 0], [0, 1, 0], atol=1e-6)


def test_two_gaussians_composite_front_to_back_over_the_layer_under_them():
    front, back = (0.0, 0.0, 1.0), (0.0, 0.0, 2.0)
    g = _gaussians(
        [back, front],  # listed back first: the order must come from depth
        [(0.05, 0.05, 0.05), (0.02, 0.02, 0.02)],
        [(0.1, 0.8, 0.3), (0.7, 0.2, 0.6)],
        [0.6, 0.5],
    )
    under = torch.full((H, W, 3), 0.25)
    img = render(g, _camera(), under).numpy()
    a_front = _by_hand(front, (0.02, 0.02, 0.02), 0.5)[..., None]
    a_back = _by_hand(back, (0.05, 0.05, 0.05), 0.6)[..., None]
    expected = (
        a_front * [0.7, 0.2, 0.6]
        + (1 - a_front) * a_back * [0.1, 0.8, 0.3]
        + (1 - a_front) * (1 - a_back) * 0.25
    )
    np.testing.assert_allclose(img, expected, atol=3e-6)
    # A layer at depth 1.5 hides the back Gaussian (not the front one) where it lies.
    depth = torch.full((H, W), 1.5)
    img = render(g, _camera(), under, depth).numpy()
    expected = a_front * [0.7, 0.2, 0.6] + (1 - a_front) * 0.25
    np.testing.assert_allclose(img, expected, atol=3e-6)


def test_gradients_match_finite_differences():
    """torch.autograd.gradcheck in float64 on two overlapping Gaussians: every parameter
    (centre, rotation, scale, colour, opacity)."""
    g = _gaussians(
        [(0.02, -0.01, 1.0), (-0.01, 0.015, 1.3)],
        [(0.03, 0.02, 0.01), (0.04, 0.03, 0.02)],
        [(0.7, 0.3, 0.5), (0.2, 0.6, 0.4)],
        [0.7, 0.6],
        [[0.9, 0.1, -0.2, 0.3], [0.8, -0.3, 0.1, 0.2]],
        dtype=torch.float64,
    )
    cam = _camera(torch.float64)
    weights = torch.rand(H, W, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)

    def loss(*tensors):
        return (render(Gaussians(*tensors), cam) * weights).sum()

    inputs = [t.clone().requires_grad_(True) for t in g.tensors()]
    assert torch.autograd.gradcheck(loss, inputs, eps=1e-6, atol=1e-5, rtol=1e-3)
