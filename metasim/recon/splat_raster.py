"""A differentiable 3D Gaussian splat rasterizer in torch, for the CPU.

The 3DGS image model (Kerbl et al. 2023, EWA splatting): each Gaussian (centre, rotation
w-x-y-z, log standard deviations, colour, opacity) is projected to a 2D Gaussian on the
image plane (the local affine approximation of the pinhole projection, plus 0.3 px^2 of
low-pass dilation); the ones covering a pixel are composited front to back, sorted by
the depth of their centres: C = sum_i c_i a_i T_i + T_n B, with
a_i = min(0.99, o_i exp(-d^T S_i^-1 d / 2)) (dropped under 1/255) and T_i the product of
(1 - a_j) over the Gaussians in front. The image is cut into tiles of `TILE` pixels; a
Gaussian is listed in every tile its 3-sigma box touches, and each tile evaluates its
list densely for its pixels, so the work grows with (tiles touched x tile pixels), not
(Gaussians x image pixels). An opaque layer (a mesh render: colour and depth) can sit
under the splats: a Gaussian behind its depth at a pixel does not show there, and the
layer's colour is B. Everything is torch autograd; cameras are OpenCV pinholes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from metasim.recon.camera import Intrinsics

TILE = 8  # tile side in pixels
DILATION = 0.3  # px^2 added to the projected covariance (3DGS's low-pass filter)
ALPHA_MIN = 1.0 / 255.0
ALPHA_MAX = 0.99
NEAR = 0.01  # Gaussians nearer than this (scene units) are culled


@dataclass
class Camera:
    """An OpenCV pinhole: `world_to_cam` (4, 4) and its intrinsics `intr` (pixel
    centres at integers)."""

    world_to_cam: torch.Tensor
    intr: Intrinsics


@dataclass
class Gaussians:
    """Optimisable Gaussians: `means` (N, 3), `quats` (N, 4) w-x-y-z (normalised on
    use), `log_scales` (N, 3) log standard deviations, `colour_logits` (N, 3) and
    `opacity_logits` (N,) (sigmoid gives colour and opacity in [0, 1])."""

    means: torch.Tensor
    quats: torch.Tensor
    log_scales: torch.Tensor
    colour_logits: torch.Tensor
    opacity_logits: torch.Tensor

    def tensors(self) -> list[torch.Tensor]:
        return [self.means, self.quats, self.log_scales, self.colour_logits, self.opacity_logits]


@dataclass
class Projected:
    """Gaussians on the image: centres `xy` (N, 2) px, inverse 2D covariances `conic`
    (N, 3) as (a, b, c) of [[a, b], [b, c]], camera depth `depth` (N,), 3-sigma
    `radius` (N,) px, and `visible` (N,) bool (in front and overlapping the image)."""

    xy: torch.Tensor
    conic: torch.Tensor
    depth: torch.Tensor
    radius: torch.Tensor
    visible: torch.Tensor


def quat_to_rotmat(q: torch.Tensor) -> torch.Tensor:
    """(N, 3, 3) rotation matrices of (N, 4) w-x-y-z quaternions (normalised here)."""
    q = q / q.norm(dim=1, keepdim=True).clamp_min(1e-12)
    w, x, y, z = q.unbind(1)
    rows = [
        1 - 2 * (y * y + z * z),
        2 * (x * y - w * z),
        2 * (x * z + w * y),
        2 * (x * y + w * z),
        1 - 2 * (x * x + z * z),
        2 * (y * z - w * x),
        2 * (x * z - w * y),
        2 * (y * z + w * x),
        1 - 2 * (x * x + y * y),
    ]
    return torch.stack(rows, dim=1).reshape(-1, 3, 3)


def project(g: Gaussians, cam: Camera) -> Projected:
    """The 2D Gaussians of `g` seen by `cam` (EWA: Sigma2 = J W Sigma3 W^T J^T)."""
    k = cam.intr
    rot, trans = cam.world_to_cam[:3, :3], cam.world_to_cam[:3, 3]
    t = g.means @ rot.T + trans  # (N, 3) camera coordinates
    z = t[:, 2]
    front = z > NEAR
    zs = torch.where(front, z, torch.ones_like(z))
    # Clamp x/z, y/z to 1.3x the field of view, as 3DGS does, so that J stays bounded.
    lim_x = 1.3 * max(k.cx, k.width - 1 - k.cx) / k.fx + 0.5 / k.fx
    lim_y = 1.3 * max(k.cy, k.height - 1 - k.cy) / k.fy + 0.5 / k.fy
    tx = (t[:, 0] / zs).clamp(-lim_x, lim_x) * zs
    ty = (t[:, 1] / zs).clamp(-lim_y, lim_y) * zs
    zero = torch.zeros_like(zs)
    jac = torch.stack(
        [k.fx / zs, zero, -k.fx * tx / zs**2, zero, k.fy / zs, -k.fy * ty / zs**2], dim=1
    ).reshape(-1, 2, 3)
    r = quat_to_rotmat(g.quats)
    m = r * torch.exp(g.log_scales)[:, None, :]  # R S
    sigma3 = m @ m.transpose(1, 2)
    jw = jac @ rot
    sigma2 = jw @ sigma3 @ jw.transpose(1, 2)
    a = sigma2[:, 0, 0] + DILATION
    b = sigma2[:, 0, 1]
    c = sigma2[:, 1, 1] + DILATION
    det = (a * c - b * b).clamp_min(1e-12)
    conic = torch.stack([c / det, -b / det, a / det], dim=1)
    half = 0.5 * (a + c)
    lam = half + torch.sqrt((half * half - det).clamp_min(0.1))
    radius = torch.ceil(3.0 * torch.sqrt(lam)).detach()
    xy = torch.stack([k.fx * t[:, 0] / zs + k.cx, k.fy * t[:, 1] / zs + k.cy], dim=1)
    with torch.no_grad():
        inside = (
            (xy[:, 0] + radius >= -0.5)
            & (xy[:, 0] - radius <= k.width - 0.5)
            & (xy[:, 1] + radius >= -0.5)
            & (xy[:, 1] - radius <= k.height - 0.5)
        )
    return Projected(xy, conic, z, radius, front & inside)


def _tile_pairs(p: Projected, cam: Camera) -> tuple[torch.Tensor, torch.Tensor, int]:
    """(tile id, Gaussian id) for every tile a visible Gaussian's 3-sigma box touches,
    sorted by tile, then front to back; and the number of tiles across."""
    tiles_x = (cam.intr.width + TILE - 1) // TILE
    tiles_y = (cam.intr.height + TILE - 1) // TILE
    with torch.no_grad():
        ids = torch.nonzero(p.visible).squeeze(1)
        xy, rad = p.xy[ids], p.radius[ids]
        x0 = ((xy[:, 0] - rad + 0.5) // TILE).clamp(0, tiles_x - 1).long()
        x1 = ((xy[:, 0] + rad + 0.5) // TILE).clamp(0, tiles_x - 1).long()
        y0 = ((xy[:, 1] - rad + 0.5) // TILE).clamp(0, tiles_y - 1).long()
        y1 = ((xy[:, 1] + rad + 0.5) // TILE).clamp(0, tiles_y - 1).long()
        nx, ny = x1 - x0 + 1, y1 - y0 + 1
        count = nx * ny
        gid = torch.repeat_interleave(ids, count)
        start = torch.cumsum(count, 0) - count
        k = torch.arange(len(gid)) - torch.repeat_interleave(start, count)
        nx_r = torch.repeat_interleave(nx, count)
        tx = torch.repeat_interleave(x0, count) + k % nx_r
        ty = torch.repeat_interleave(y0, count) + k // nx_r
        tile = ty * tiles_x + tx
        rank = torch.empty(len(p.depth), dtype=torch.long)
        rank[torch.argsort(p.depth.detach())] = torch.arange(len(p.depth))
        order = torch.argsort(tile * len(p.depth) + rank[gid])
    return tile[order], gid[order], tiles_x


def _entries(
    p: Projected,
    opacity_logits: torch.Tensor,
    tile: torch.Tensor,
    gid: torch.Tensor,
    tiles_x: int,
    cam: Camera,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The (pixel, Gaussian) entries worth compositing: alpha >= 1/255 inside the image.
    Returns pixel x, pixel y (long) and Gaussian id, grouped by pixel and front to back
    within a pixel (the tile pairs are sorted by tile, then depth)."""
    with torch.no_grad():
        off = torch.arange(TILE)
        px = ((tile % tiles_x) * TILE)[:, None] + off[None, :]  # (P, TILE)
        py = ((tile // tiles_x) * TILE)[:, None] + off[None, :]
        xy, con = p.xy[gid], p.conic[gid]
        dx, dy = px - xy[:, 0:1], py - xy[:, 1:2]
        power = (
            (-0.5 * con[:, 0:1] * dx * dx)[:, None, :]
            + (-0.5 * con[:, 2:3] * dy * dy)[:, :, None]
            - con[:, 1, None, None] * dy[:, :, None] * dx[:, None, :]
        )  # (P, TILE rows, TILE columns)
        opacity = torch.sigmoid(opacity_logits)[gid]
        floor = torch.log(ALPHA_MIN / opacity)[:, None, None]
        mask = (power >= floor) & (power <= 0)
        mask &= (py < cam.intr.height)[:, :, None] & (px < cam.intr.width)[:, None, :]
        # Pixel-major order: (offset in tile, pair); pairs are in (tile, depth) order.
        k, pair = torch.nonzero(mask.reshape(len(tile), -1).T, as_tuple=True)
    return px[pair, k % TILE], py[pair, k // TILE], gid[pair]


def render(
    g: Gaussians,
    cam: Camera,
    under: torch.Tensor | None = None,
    under_depth: torch.Tensor | None = None,
) -> torch.Tensor:
    """(H, W, 3) image in [0, 1] of `g` seen by `cam`, composited over the opaque layer
    `under` (H, W, 3) (black when None) whose camera depth is `under_depth` (H, W)
    (a Gaussian behind it at a pixel is hidden there; 0: nothing there, the layer is at
    infinity)."""
    height, width, dtype = cam.intr.height, cam.intr.width, g.means.dtype
    p = project(g, cam)
    tile, gid, tiles_x = _tile_pairs(p, cam)
    px, py, gid = _entries(p, g.opacity_logits, tile, gid, tiles_x, cam)
    pix = py * width + px
    if under_depth is not None:
        wall = under_depth.reshape(-1)[pix]
        front = (wall <= 0) | (p.depth[gid].detach() < wall)
        px, py, gid, pix = px[front], py[front], gid[front], pix[front]
    dx, dy = px - p.xy[gid, 0], py - p.xy[gid, 1]
    con = p.conic[gid]
    power = -0.5 * (con[:, 0] * dx * dx + con[:, 2] * dy * dy) - con[:, 1] * dx * dy
    alpha = (torch.sigmoid(g.opacity_logits)[gid] * torch.exp(power)).clamp(max=ALPHA_MAX)
    log_t = torch.log1p(-alpha.double())  # float64: summed over many entries below
    csum = torch.cumsum(log_t, dim=0)
    first = torch.ones(len(pix), dtype=torch.bool)
    first[1:] = pix[1:] != pix[:-1]
    starts = torch.nonzero(first).squeeze(1)
    seg = torch.cumsum(first.long(), 0) - 1
    before = torch.cat([csum.new_zeros(1), csum[starts[1:] - 1]])
    trans = torch.exp(csum - log_t - before[seg]).to(dtype)  # light reaching each entry
    contrib = (alpha * trans)[:, None] * torch.sigmoid(g.colour_logits)[gid]
    image = torch.zeros(height * width, 3, dtype=dtype).index_add(0, pix, contrib)
    total = torch.zeros(height * width, dtype=torch.float64).index_add(0, pix, log_t)
    rest = torch.exp(total).to(dtype)[:, None]
    base = under.reshape(-1, 3) if under is not None else torch.zeros_like(image)
    return (image + rest * base).reshape(height, width, 3)
