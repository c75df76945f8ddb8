"""openpi msgpack-numpy codec: round trips, refusals, malformed input."""

from __future__ import annotations

import msgpack
import numpy as np
import pytest

from metasim.policies.transport.errors import DecodeError
from metasim.policies.transport.msgpack_numpy import packb, unpackb

DTYPES = ["u1", "i1", "<i2", ">i4", "<i8", "<u8", "<f2", "<f4", ">f8", "?", "S5", "<U3"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (7,), (2, 3), (4, 0, 2), (2, 3, 4, 1)])
def test_array_round_trip(dtype: str, shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(0)
    raw = rng.integers(0, 100, size=shape)
    arr = raw.astype(dtype)
    out = unpackb(packb(arr))
    assert isinstance(out, np.ndarray)
    assert out.dtype == arr.dtype and out.shape == arr.shape
    np.testing.assert_array_equal(out, arr)
    assert out.flags.writeable


def test_non_contiguous_and_fortran_arrays() -> None:
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    for arr in (base[:, ::2], base.T, np.asfortranarray(base)):
        out = unpackb(packb(arr))
        np.testing.assert_array_equal(out, arr)


def test_image_like_and_nested_dicts() -> None:
    obs = {
        "observation/image": np.random.default_rng(1).integers(0, 255, (224, 224, 3), np.uint8),
        "observation/state": np.linspace(-1, 1, 8),
        "prompt": "pick up the cube",
        "nested": {"a": [1, 2.5, None, True], "b": {"c": np.eye(2, dtype=np.float32)}},
        "tuple": (1, 2),
        "bytes": b"\x00\x01",
    }
    out = unpackb(packb(obs))
    assert out["prompt"] == "pick up the cube"
    np.testing.assert_array_equal(out["observation/image"], obs["observation/image"])
    np.testing.assert_array_equal(out["observation/state"], obs["observation/state"])
    assert out["nested"]["a"] == [1, 2.5, None, True]
    np.testing.assert_array_equal(out["nested"]["b"]["c"], np.eye(2))
    assert out["nested"]["b"]["c"].dtype == np.float32
    assert out["tuple"] == [1, 2]
    assert out["bytes"] == b"\x00\x01"


@pytest.mark.parametrize(
    "scalar",
    [
        np.float32(1.5),
        np.float64(-2.25),
        np.float16(0.5),
        np.int8(-3),
        np.int64(2**62),
        np.uint64(2**64 - 1),
        np.bool_(True),
        np.str_("hi"),
        np.bytes_(b"xy"),
        np.datetime64("2024-05-01T12:00"),
    ],
)
def test_scalar_round_trip(scalar: np.generic) -> None:
    out = unpackb(packb({"s": scalar}))["s"]
    assert type(out) is type(scalar)
    assert out.dtype == scalar.dtype
    assert out == scalar


def test_wire_format_matches_openpi() -> None:
    """Marker keys are msgpack bin (bytes) keys, like openpi's encoder, so openpi decodes us."""
    arr = np.arange(3, dtype="<i4")
    raw = msgpack.unpackb(packb(arr), raw=False)
    assert raw == {
        b"__ndarray__": True,
        b"data": arr.tobytes(),
        b"dtype": "<i4",
        b"shape": [3],
    }
    raw_scalar = msgpack.unpackb(packb(np.float32(2.0)), raw=False)
    assert raw_scalar == {b"__npgeneric__": True, b"data": 2.0, b"dtype": "<f4"}


def test_decodes_str_keys_and_bytes_scalar_data() -> None:
    """The brief's spelling (str keys, raw bytes for scalars) decodes too."""
    arr = np.arange(4, dtype="<f8").reshape(2, 2)
    doc = {"__ndarray__": True, "data": arr.tobytes(), "dtype": "<f8", "shape": [2, 2]}
    np.testing.assert_array_equal(unpackb(msgpack.packb(doc)), arr)
    sc = {"__npgeneric__": True, "data": np.float32(3.5).tobytes(), "dtype": "<f4"}
    out = unpackb(msgpack.packb(sc))
    assert out == np.float32(3.5) and out.dtype == np.float32


@pytest.mark.parametrize(
    "bad",
    [
        np.array([1, "a", None], dtype=object),
        np.array([1 + 2j]),
        np.complex64(1j),
        np.zeros(2, dtype=[("a", "<i4"), ("b", "<f4")]),
        np.void(b"\x00\x01"),
    ],
)
def test_refused_dtypes(bad: object) -> None:
    with pytest.raises(ValueError, match="unsupported numpy dtype"):
        packb({"x": bad})


def test_unsupported_python_objects() -> None:
    with pytest.raises(TypeError, match="cannot msgpack-encode"):
        packb({"x": object()})
    with pytest.raises(TypeError):
        packb({"x": {1, 2}})
    with pytest.raises(ValueError):
        packb({"x": 2**70})


def _nd(**over: object) -> bytes:
    doc: dict[object, object] = {
        b"__ndarray__": True,
        b"data": np.arange(4, dtype="<f4").tobytes(),
        b"dtype": "<f4",
        b"shape": [4],
    }
    for k, v in over.items():
        if v is _DROP:
            del doc[k.encode()]
        else:
            doc[k.encode()] = v
    return msgpack.packb(doc, use_bin_type=True)


_DROP = object()


@pytest.mark.parametrize(
    ("frame", "match"),
    [
        (_nd(data=b"\x00" * 15), "needs 16"),
        (_nd(shape=[5]), "needs 20"),
        (_nd(shape=[-4]), "non-negative"),
        (_nd(shape="4"), "shape"),
        (_nd(shape=[2.0, 2]), "shape"),
        (_nd(dtype="not-a-dtype"), "bad dtype"),
        (_nd(dtype="|O"), "object"),
        (_nd(dtype="<c8"), "complex"),
        (_nd(dtype="V4"), "void"),
        (_nd(dtype="i4,f4"), "void"),
        (_nd(dtype="S0"), "zero item size"),
        (_nd(dtype=7), "dtype must be a string"),
        (_nd(data="text"), "must be bytes"),
        (_nd(data=_DROP), "lacks the 'data'"),
        (_nd(shape=_DROP), "lacks the 'shape'"),
        (b"\xc1", "undecodable"),
        (b"\x92\x01", "undecodable"),
        (msgpack.packb(1) + b"\x00", "undecodable"),
        (b"", "undecodable"),
        (
            msgpack.packb({b"__npgeneric__": True, b"data": "abc", b"dtype": "<i4"}),
            "cannot make",
        ),
        (
            msgpack.packb({b"__npgeneric__": True, b"data": [1], b"dtype": "<i4"}),
            "not supported",
        ),
    ],
)
def test_malformed_input_raises_decode_error(frame: bytes, match: str) -> None:
    with pytest.raises(DecodeError, match=match):
        unpackb(frame)


def test_decode_error_is_a_value_error_and_non_bytes_refused() -> None:
    assert issubclass(DecodeError, ValueError)
    with pytest.raises(DecodeError):
        unpackb("a string")  # type: ignore[arg-type]


def test_never_unpickles() -> None:
    """A pickle-looking payload is just bytes, never executed or loaded."""
    import pickle

    blob = pickle.dumps({"a": 1})
    with pytest.raises(DecodeError):
        unpackb(blob)
    out = unpackb(packb({"blob": blob}))
    assert out == {"blob": blob}
