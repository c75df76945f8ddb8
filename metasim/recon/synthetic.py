"""A known MuJoCo tabletop scanned by a moving camera: ground truth for `metasim recon`.

Two scenes (`TruthScene`): `TABLETOP`, a table top alone in empty space with a box, a
cylinder and a ball (`TRUTH`); and `ROOM`, a smaller table on legs in a room (floor and
two walls in view, as in a real phone scan) with a tall box, a ball and a short cylinder.
`write_rgbd_capture` writes a capture folder in the documented format (rgb/, depth/,
intrinsics.json, poses.json in the OpenCV or OpenGL convention); `write_video` an MP4 of
the same orbit. The true primitives let tests measure centroid error and Chamfer
distance; surfaces are sampled by `sample_true_surfaces`. Textures are smooth random
noise, so structure from motion finds features everywhere.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np
from PIL import Image

from metasim.recon.camera import Intrinsics, add_scan_camera, look_at_pose, render_views

TABLE_HALF = (0.35, 0.45, 0.02)  # the table top: a box whose upper face is z = 0


@dataclass(frozen=True)
class TruePrimitive:
    """A primitive resting on the table: `size` as in MuJoCo (box half-extents,
    cylinder (radius, half-height), sphere (radius,)); `pos` its centre."""

    name: str
    shape: str
    size: tuple[float, ...]
    pos: tuple[float, float, float]
    yaw: float = 0.0


TRUTH = (
    TruePrimitive("box", "box", (0.025, 0.035, 0.03), (0.05, -0.12, 0.03), yaw=0.5),
    TruePrimitive("can", "cylinder", (0.03, 0.045), (-0.08, 0.06, 0.045)),
    TruePrimitive("ball", "sphere", (0.032,), (0.1, 0.12, 0.032)),
)


@dataclass(frozen=True)
class TruthScene:
    """What the synthetic scan shows: a table top of half-extents `table_half` (upper
    face z = 0), the primitives standing on it, and with `room` the room around it: a
    floor `FLOOR_DEPTH` below the table top, the table's legs and two walls (`WALLS`)."""

    table_half: tuple[float, float, float]
    primitives: tuple[TruePrimitive, ...]
    room: bool = False
    marker_at: tuple[float, float] = (-0.16, -0.26)  # where an ArUco marker lies, if any


TABLETOP = TruthScene(TABLE_HALF, TRUTH)
ROOM_TRUTH = (
    TruePrimitive("tall_box", "box", (0.022, 0.03, 0.07), (0.07, -0.09, 0.07), yaw=0.4),
    TruePrimitive("ball", "sphere", (0.033,), (-0.08, -0.04, 0.033)),
    TruePrimitive("puck", "cylinder", (0.03, 0.018), (0.02, 0.11, 0.018)),
)
ROOM = TruthScene((0.25, 0.32, 0.02), ROOM_TRUTH, room=True, marker_at=(-0.14, 0.21))
FLOOR_DEPTH = 0.74  # m from the table top down to the floor
WALLS = (("x", -1.1), ("y", 1.2))  # the inner faces of two walls: x = -1.1 and y = 1.2
ROOM_ORBIT = {"radius": 0.6, "height": 0.5}  # a scan from further out: the room in view


def _noise_texture(path: Path, seed: int, size: int = 512) -> None:
    """Write a PNG of smooth colour noise (several octaves), good for feature matching."""
    rng = np.random.default_rng(seed)
    img: np.ndarray = np.zeros((size, size, 3))
    for cells, weight in ((8, 0.5), (32, 0.3), (128, 0.2)):
        coarse = rng.random((cells, cells, 3))
        up = np.asarray(
            Image.fromarray((coarse * 255).astype(np.uint8)).resize(
                (size, size), Image.Resampling.BICUBIC
            )
        )
        img += weight * up / 255.0
    base = rng.random(3) * 0.5 + 0.25
    img = np.clip(0.35 * base + 0.9 * (img - 0.5) + 0.5, 0, 1)
    Image.fromarray((img * 255).astype(np.uint8)).save(path)


MARKER_SIDE = 0.1  # m, the black square of the ArUco marker (with a white margin around)


def _add_marker(spec: mujoco.MjSpec, tex_dir: Path, centre: tuple[float, float]) -> None:
    """An ArUco DICT_4X4_50 marker (id 0) lying on the table: a textured quad."""
    import cv2

    dictionary = cv2.aruco.getPredefinedDictionary(cv2.aruco.DICT_4X4_50)
    inner = cv2.aruco.generateImageMarker(dictionary, 0, 240)
    img = np.pad(inner, 60, constant_values=255)
    Image.fromarray(img).convert("RGB").save(tex_dir / "marker.png")
    spec.add_texture(
        name="marker", type=mujoco.mjtTexture.mjTEXTURE_2D, file=str(tex_dir / "marker.png")
    )
    mat = spec.add_material(name="marker", specular=0.0, shininess=0.0)
    textures = [""] * int(mujoco.mjtTextureRole.mjNTEXROLE)
    textures[int(mujoco.mjtTextureRole.mjTEXROLE_RGB)] = "marker"
    mat.textures = textures
    h = MARKER_SIDE * 360 / 240 / 2
    mesh = spec.add_mesh(name="marker")
    mesh.uservert = [-h, -h, 0, h, -h, 0, h, h, 0, -h, h, 0]
    mesh.usertexcoord = [0, 1, 1, 1, 1, 0, 0, 0]  # image rows run down, v runs up
    mesh.userface = [0, 1, 2, 0, 2, 3]
    mesh.userfacetexcoord = [0, 1, 2, 0, 2, 3]
    mesh.inertia = mujoco.mjtMeshInertia.mjMESH_INERTIA_SHELL
    spec.worldbody.add_geom(
        name="marker",
        type=mujoco.mjtGeom.mjGEOM_MESH,
        meshname="marker",
        material="marker",
        pos=[*centre, 0.0005],
        contype=0,
        conaffinity=0,
    )


def _material(spec: mujoco.MjSpec, tex_dir: Path, name: str, seed: int, repeat: float) -> None:
    """A noise-textured material `name` (`repeat` > 0: uniform, repeats per metre)."""
    file = tex_dir / f"{name}.png"
    _noise_texture(file, seed=seed)
    spec.add_texture(name=name, type=mujoco.mjtTexture.mjTEXTURE_2D, file=str(file))
    mat = spec.add_material(name=name, specular=0.0, shininess=0.0)
    textures = [""] * int(mujoco.mjtTextureRole.mjNTEXROLE)
    textures[int(mujoco.mjtTextureRole.mjTEXROLE_RGB)] = name
    mat.textures = textures
    mat.texrepeat = [repeat, repeat] if repeat > 0 else [1, 1]
    mat.texuniform = repeat > 0


def _box(spec: mujoco.MjSpec, name: str, half: list[float], pos: list[float], mat: str) -> None:
    spec.worldbody.add_geom(
        name=name, type=mujoco.mjtGeom.mjGEOM_BOX, size=half, pos=pos, material=mat
    )


def _add_room(spec: mujoco.MjSpec, tex_dir: Path, table_half: tuple[float, ...]) -> None:
    """Floor, table legs and two walls around the table (the `ROOM` scene)."""
    _material(spec, tex_dir, "floor", seed=11, repeat=1.0)
    _material(spec, tex_dir, "wall", seed=12, repeat=1.0)
    _box(spec, "floor", [3.0, 3.0, 0.01], [0, 0, -FLOOR_DEPTH - 0.01], "floor")
    height, top, c = 1.25, 2 * table_half[2], math.sqrt(0.5)
    for axis, at in WALLS:  # planes (textured evenly, unlike a box's side), facing the table
        facing_x = axis == "x"
        spec.worldbody.add_geom(
            name=f"wall_{axis}",
            type=mujoco.mjtGeom.mjGEOM_PLANE,
            size=[height, 3.0, 0.1] if facing_x else [3.0, height, 0.1],
            pos=[at, 0.0, height - FLOOR_DEPTH] if facing_x else [0.0, at, height - FLOOR_DEPTH],
            quat=[c, 0.0, math.copysign(c, -at), 0.0]
            if facing_x
            else [c, math.copysign(c, at), 0, 0],
            material="wall",
        )
    leg = (FLOOR_DEPTH - top) / 2
    for i, (sx, sy) in enumerate(((1, 1), (1, -1), (-1, 1), (-1, -1))):
        xy = [sx * (table_half[0] - 0.05), sy * (table_half[1] - 0.05)]
        _box(spec, f"leg{i}", [0.02, 0.02, leg], [*xy, -top - leg], "table")


def build_truth_model(
    tex_dir: Path, marker: bool = False, scene: TruthScene = TABLETOP
) -> mujoco.MjModel:
    """The ground-truth scene: a textured table top and `scene`'s primitives (and its
    room; and an ArUco marker of side `MARKER_SIDE` when `marker`)."""
    tex_dir.mkdir(parents=True, exist_ok=True)
    spec = mujoco.MjSpec()
    spec.visual.headlight.ambient = [0.35, 0.35, 0.35]
    spec.visual.headlight.diffuse = [0.45, 0.45, 0.45]
    spec.visual.headlight.specular = [0.0, 0.0, 0.0]
    spec.worldbody.add_light(
        name="sun", pos=[0, 0, 2], dir=[0.2, 0.1, -1], diffuse=[0.4, 0.4, 0.4], castshadow=False
    )
    _material(spec, tex_dir, "table", seed=0, repeat=3.0)
    for i, p in enumerate(scene.primitives):
        _material(spec, tex_dir, p.name, seed=i + 1, repeat=0.0)
    half = list(scene.table_half)
    _box(spec, "table", half, [0, 0, -half[2]], "table")
    if scene.room:
        _add_room(spec, tex_dir, scene.table_half)
    kinds = {
        "box": mujoco.mjtGeom.mjGEOM_BOX,
        "cylinder": mujoco.mjtGeom.mjGEOM_CYLINDER,
        "sphere": mujoco.mjtGeom.mjGEOM_SPHERE,
    }
    for p in scene.primitives:
        size = list(p.size) + [0.0] * (3 - len(p.size))
        quat = [math.cos(p.yaw / 2), 0, 0, math.sin(p.yaw / 2)]
        spec.worldbody.add_geom(
            name=p.name, type=kinds[p.shape], size=size, pos=list(p.pos), quat=quat, material=p.name
        )
    if marker:
        _add_marker(spec, tex_dir, scene.marker_at)
    add_scan_camera(spec)
    return spec.compile()


def orbit_poses(
    n: int, radius: float = 0.42, height: float = 0.36, turns: float = 1.0
) -> np.ndarray:
    """(n, 4, 4) camera-to-world poses on a rising, wobbling orbit around the table centre."""
    poses = []
    for k in range(n):
        a = 2 * math.pi * turns * k / n
        r = radius * (1.0 + 0.12 * math.sin(3 * a))
        z = height + 0.1 * math.sin(2 * a)
        eye = np.array([r * math.cos(a), r * math.sin(a), z])
        target = np.array([0.02 * math.cos(5 * a), 0.02 * math.sin(4 * a), 0.02])
        poses.append(look_at_pose(eye, target))
    return np.stack(poses)


def render_scan(
    work: Path,
    n: int = 40,
    width: int = 320,
    height: int = 240,
    fovy: float = 55.0,
    marker: bool = False,
    scene: TruthScene = TABLETOP,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, Intrinsics]:
    """Render the truth from `n` orbit poses (`ROOM_ORBIT` for a room): (rgb (N,H,W,3),
    depth (N,H,W) m, poses (N,4,4) camera-to-world (OpenCV), K)."""
    model = build_truth_model(work / "textures", marker, scene)
    intr = Intrinsics.from_fovy(fovy, width, height)
    poses = orbit_poses(n, **ROOM_ORBIT) if scene.room else orbit_poses(n)
    rgb = render_views(model, poses, intr)
    depth = render_views(model, poses, intr, depth=True)
    return rgb, depth, poses, intr


# The world frame of an ARKit / Record3D capture: y up (the truth's z), x the truth's x.
Y_UP = np.array([[1.0, 0, 0, 0], [0, 0, 1, 0], [0, -1, 0, 0], [0, 0, 0, 1]])


def write_rgbd_capture(
    folder: Path,
    rgb: np.ndarray,
    depth: np.ndarray,
    poses: np.ndarray | None,
    intr: Intrinsics,
    depth_format: str = "png",
    convention: str = "opencv",
    world: np.ndarray | None = None,
) -> None:
    """Write a capture folder: rgb/NNNN.png, depth/NNNN.png (uint16 mm) or .npy (m),
    intrinsics.json and, when `poses` (OpenCV camera-to-truth) are given, poses.json in
    `convention` ("opencv" or "opengl"), expressed in the frame `world` (4x4 truth ->
    capture world; e.g. `Y_UP`, as ARKit's; identity by default)."""
    (folder / "rgb").mkdir(parents=True, exist_ok=True)
    (folder / "depth").mkdir(parents=True, exist_ok=True)
    for i, (img, d) in enumerate(zip(rgb, depth, strict=True)):
        Image.fromarray(img).save(folder / "rgb" / f"{i:04d}.png")
        if depth_format == "npy":
            np.save(folder / "depth" / f"{i:04d}.npy", d.astype(np.float32))
        else:
            mm = np.clip(np.round(d * 1000.0), 0, 65535).astype(np.uint16)
            Image.fromarray(mm).save(folder / "depth" / f"{i:04d}.png")
    (folder / "intrinsics.json").write_text(json.dumps(intr.to_json(), indent=1))
    if poses is not None:
        out = np.asarray(poses if world is None else world @ poses)
        if convention == "opengl":
            out = out @ np.diag([1.0, -1.0, -1.0, 1.0])
        frames = [
            {"file": f"{i:04d}.png", "camera_to_world": p.tolist()} for i, p in enumerate(out)
        ]
        (folder / "poses.json").write_text(json.dumps({"convention": convention, "frames": frames}))


def write_video(path: Path, rgb: np.ndarray, fps: int = 10) -> None:
    """Write frames (N, H, W, 3) as a nearly lossless H.264 MP4 (imageio-ffmpeg)."""
    import imageio_ffmpeg

    height, width = rgb.shape[1:3]
    writer = imageio_ffmpeg.write_frames(
        str(path), (width, height), fps=fps, codec="libx264", quality=10, macro_block_size=8
    )
    writer.send(None)
    for img in rgb:
        writer.send(np.ascontiguousarray(img))
    writer.close()


def sample_true_surfaces(
    spacing: float = 0.0015, scene: TruthScene = TABLETOP
) -> tuple[np.ndarray, np.ndarray]:
    """Points on the true surfaces (table top, primitives; not the room), (M, 3), and
    their owner (M,) int: -1 the table, k the k-th primitive. Faces that touch the table
    are left out (no camera can see them)."""
    top = _table_top(spacing, scene)
    pts, owner = [top], [np.full(len(top), -1)]
    for k, p in enumerate(scene.primitives):
        s = _primitive_surface(p, spacing)
        pts.append(s)
        owner.append(np.full(len(s), k))
    return np.concatenate(pts), np.concatenate(owner)


def _table_top(spacing: float, scene: TruthScene) -> np.ndarray:
    hx, hy = scene.table_half[:2]
    xs = np.arange(-hx, hx + 1e-9, spacing)
    ys = np.arange(-hy, hy + 1e-9, spacing)
    gx, gy = np.meshgrid(xs, ys)
    pts = np.stack([gx.ravel(), gy.ravel(), np.zeros(gx.size)], axis=1)
    inside = np.zeros(len(pts), dtype=bool)
    for p in scene.primitives:  # the table under an object is hidden
        inside |= _footprint(p, pts)
    return np.asarray(pts[~inside])


def _footprint(p: TruePrimitive, pts: np.ndarray) -> np.ndarray:
    rel = pts[:, :2] - np.asarray(p.pos[:2])
    if p.shape == "box":
        c, s = math.cos(p.yaw), math.sin(p.yaw)
        local = rel @ np.array([[c, -s], [s, c]])
        return np.asarray(np.all(np.abs(local) < np.asarray(p.size[:2]), axis=1))
    if p.shape == "cylinder":
        return np.asarray(np.linalg.norm(rel, axis=1) < p.size[0])
    return np.zeros(len(pts), dtype=bool)


def _primitive_surface(p: TruePrimitive, spacing: float) -> np.ndarray:
    centre = np.asarray(p.pos)
    if p.shape == "sphere":
        r = p.size[0]
        n = int(4 * math.pi * r * r / spacing**2)
        v = np.random.default_rng(0).normal(size=(n, 3))
        return np.asarray(centre + r * v / np.linalg.norm(v, axis=1, keepdims=True))
    if p.shape == "cylinder":
        r, h = p.size
        a = np.arange(0, 2 * math.pi, spacing / r)
        zs = np.arange(-h, h + 1e-9, spacing)
        ga, gz = np.meshgrid(a, zs)
        side = np.stack([r * np.cos(ga.ravel()), r * np.sin(ga.ravel()), gz.ravel()], axis=1)
        g = np.arange(-r, r + 1e-9, spacing)
        gx, gy = np.meshgrid(g, g)
        disc = np.stack([gx.ravel(), gy.ravel()], axis=1)
        disc = disc[np.linalg.norm(disc, axis=1) <= r]
        top = np.concatenate([disc, np.full((len(disc), 1), h)], axis=1)
        return np.asarray(centre + np.concatenate([side, top]))
    hx, hy, hz = p.size
    faces = []
    for axis, half in enumerate((hx, hy, hz)):
        others = [i for i in range(3) if i != axis]
        u = np.arange(-p.size[others[0]], p.size[others[0]] + 1e-9, spacing)
        w = np.arange(-p.size[others[1]], p.size[others[1]] + 1e-9, spacing)
        gu, gw = np.meshgrid(u, w)
        for sign in (-1.0, 1.0) if axis < 2 else (1.0,):
            f = np.zeros((gu.size, 3))
            f[:, others[0]], f[:, others[1]], f[:, axis] = gu.ravel(), gw.ravel(), sign * half
            faces.append(f)
    local = np.concatenate(faces)
    c, s = math.cos(p.yaw), math.sin(p.yaw)
    rot = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])
    return np.asarray(centre + local @ rot.T)
