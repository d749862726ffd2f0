"""The one launch path (launch/prepared.py): bind, pack, dispatch, time, read back, release — on ref and lavapipe."""

from __future__ import annotations

import numpy as np
import pytest

import hydroplane
from hydroplane.lang import Buffer, CompilationError, f32, global_id, readonly, s32, u8
from hydroplane.launch import executors
from hydroplane.launch.checks import PushConstantError, pack_push_constants
from hydroplane.launch.jit import JitLaunchError, device_array

pytestmark = pytest.mark.vulkan
DEVICES = ["ref", 0]


@hydroplane.kernel(local_size=32)
def axpb(x: Buffer[f32, readonly], y: Buffer[f32], a: f32, b: s32, n: s32):
    i = global_id()
    if i < n:
        y[i] = a * x[i] + f32(b)


@hydroplane.kernel(local_size=32)
def bytes_plus(x: Buffer[u8, readonly], y: Buffer[u8], k: u8, n: s32):
    i = global_id()
    if i < n:
        y[i] = x[i] + k


def _inputs(rng, n):
    x = rng.standard_normal(n).astype(np.float32) * 100
    x[:3] = [0.0, -0.0, np.float32(3.4e38)]
    return x, np.full(n, -7.25e4, np.float32)  # y poisoned


@pytest.mark.parametrize("device", DEVICES)
def test_prepared_launch_dispatches_times_and_reads(device):
    rng = np.random.default_rng()
    n = 77
    x, y = _inputs(rng, n)
    a, b = float(rng.uniform(-3, 3)), int(rng.integers(-50, 50))
    with axpb[(3,)].prepare(x, y, a, b, n, device=device) as launch:
        launch.dispatch()
        got = launch.read("y")
        times = launch.time(repeat=3, warmup=0, warmup_s=0.0)
    with np.errstate(over="ignore"):
        want = np.float32(a) * x + np.float32(b)
    np.testing.assert_array_equal(got, want)
    assert len(times) == 3 and all(t > 0 for t in times)
    assert (y == -7.25e4).all()  # a prepared launch reads back on request; the caller's array is untouched


@pytest.mark.parametrize("device", DEVICES)
def test_device_arrays_bind_without_copies_and_results_stay_there(device):
    rng = np.random.default_rng()
    n = 64
    x, y = _inputs(rng, n)
    dx, dy = device_array(x, device), device_array(y, device)
    axpb[(2,)](dx, dy, 2.0, -3, n)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(dy.numpy(), np.float32(2.0) * x - 3)
    dy.write(np.zeros(n, np.float32))
    assert (dy.numpy() == 0).all()
    dx.release()
    dx.release()  # twice is safe
    with pytest.raises(JitLaunchError, match="x: the device array was released"):
        axpb[(2,)](dx, dy, 2.0, -3, n)


def test_a_device_array_of_another_executor_is_refused():
    x, y = _inputs(np.random.default_rng(), 32)
    dx = device_array(x, "ref")
    with pytest.raises(JitLaunchError, match="device arrays of \\['ref'\\] with device=0"):
        axpb[(1,)](dx, y, 1.0, 0, 32, device=0)


@pytest.mark.parametrize("device", DEVICES)
def test_push_constants_pack_by_declared_type(device):
    rng = np.random.default_rng()
    n = 40
    x = rng.integers(0, 256, n, dtype=np.uint8)
    y = np.full(n, 0xAA, np.uint8)
    bytes_plus[(2,)](x, y, 200, n, device=device)
    np.testing.assert_array_equal(y, (x.astype(np.int64) + 200).astype(np.uint8))
    with pytest.raises(JitLaunchError, match="k: 256 does not fit u8"):
        bytes_plus[(2,)](x, y, 256, n, device=device)
    with pytest.raises(JitLaunchError, match="k: expected a u8 number, got str"):
        bytes_plus[(2,)](x, y, "1", n, device=device)


def test_read_only_outputs_are_refused_before_any_work():
    x, y = _inputs(np.random.default_rng(), 32)
    y.setflags(write=False)
    with pytest.raises(JitLaunchError, match="y: the kernel writes this buffer, but the array is read-only"):
        axpb[(1,)](x, y, 1.0, 0, 32, device="ref")
    x.setflags(write=False)  # a read-only input is fine
    out = np.zeros(32, np.float32)
    axpb[(1,)](x, out, 1.0, 0, 32, device="ref")
    np.testing.assert_array_equal(out, x)


@pytest.mark.parametrize("bad, message", [
    (lambda x, y: axpb(x, y, 1.0, 0, 32), "axpb is a kernel: launch it with a grid"),
    (lambda x, y: axpb[1.5](x, y, 1.0, 0, 32), "a grid is 1 to 3 positive ints"),
    (lambda x, y: axpb[(0,)](x, y, 1.0, 0, 32), "a grid is 1 to 3 positive ints"),
    (lambda x, y: axpb[lambda c: None](x, y, 1.0, 0, 32), "a grid is 1 to 3 positive ints"),
    (lambda x, y: axpb[(1,)](x, y, 1.0, 0, 32, device="cuda"), "device must be 'ref' or a Vulkan device number"),
    (lambda x, y: axpb[(1,)](x, y, 1.0, 0, 32, device=-1), "device must be 'ref' or a Vulkan device number"),
    (lambda x, y: device_array(None), "device_array\\(\\) takes an array of numbers"),
    (lambda x, y: device_array(["a", "b"]), "device_array\\(\\) takes an array of numbers"),
])
def test_bad_launches_say_what(bad, message):
    x, y = _inputs(np.random.default_rng(), 32)
    with pytest.raises(executors.LaunchError, match=message):
        bad(x, y)


def test_the_one_packer_refuses_what_does_not_fit():
    spec = axpb.compile()
    iface = spec.compiled().interface
    data = pack_push_constants(iface, [0.5, -2, 9])
    assert len(data) == iface.push_constant_size
    assert np.frombuffer(data[:4], np.float32)[0] == 0.5
    with pytest.raises(PushConstantError, match="2 values given for the block's 3 members"):
        pack_push_constants(iface, [0.5, -2])
    with pytest.raises(PushConstantError, match="b: 1.5 is not an integer"):  # member names from OpMemberName
        pack_push_constants(iface, [0.5, 1.5, 9])
    with pytest.raises(PushConstantError, match="b: 2147483648 does not fit s32"):
        pack_push_constants(iface, [0.5, 1 << 31, 9], names=["a", "b", "n"])


@pytest.mark.parametrize("local_size", [None, 1.5, (0,), (1, 2, 3, 4), True, lambda constexprs: None])
def test_a_bad_local_size_is_a_compilation_error(local_size):
    @hydroplane.kernel(local_size=local_size)
    def fill(y: Buffer[f32]):
        y[global_id()] = 1.0

    with pytest.raises(CompilationError, match="local_size must be 1 to 3 positive ints"):
        fill[(1,)](np.zeros(4, np.float32), device="ref")
