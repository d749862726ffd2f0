"""Bad input gives a HydroplaneError that says what and where, never another exception: modules with
random words changed, endless loops, absurd sizes."""

from __future__ import annotations

import numpy as np
import pytest
from ref_helpers import glsl

from hydroplane.errors import HydroplaneError
from hydroplane.ref import Executor
from hydroplane.ref.errors import ExecutionLimitError, InvalidModuleError

KERNEL = """#version 450
layout(local_size_x = 16) in;
layout(set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(set = 0, binding = 1) buffer B { uint b[]; };
shared uint s[16];
uint f(uint x) { return x * 3u + 1u; }
void main() {
    uint l = gl_LocalInvocationID.x;
    s[l] = a[l];
    barrier();
    uint acc = 0u;
    for (uint k = 0u; k < (s[(l + 1u) % 16u] & 7u); k++) acc += f(k) ^ s[k % 16u];
    b[l] = acc;
}"""


def test_mutated_modules_fail_with_hydroplane_errors_only():
    words = np.frombuffer(glsl(KERNEL), np.uint32).copy()
    rng = np.random.default_rng(18)
    a = rng.integers(0, 100, 16).astype(np.uint32)
    outcomes = {"ran": 0, "error": 0}
    for trial in range(150):
        mutated = words.copy()
        for _ in range(rng.integers(1, 3)):
            pos = int(rng.integers(5, len(words)))
            choice = rng.integers(0, 3)
            if choice == 0:
                mutated[pos] = rng.integers(0, 2**32, dtype=np.uint64)
            elif choice == 1:
                mutated[pos] ^= np.uint32(1 << int(rng.integers(0, 32)))
            else:
                mutated[pos] = rng.integers(0, 64)
        ex = Executor(max_blocks=20000)
        try:
            kernel = ex.kernel(mutated.tobytes())
            ex.dispatch(kernel, (1, 1, 1), {0: ex.buffer(a), 1: ex.buffer(64)})
            outcomes["ran"] += 1
        except HydroplaneError as exc:
            assert str(exc), f"trial {trial}: empty message"
            outcomes["error"] += 1
    assert outcomes["error"] > 20 and outcomes["ran"] > 5, outcomes


def test_endless_loop_hits_the_block_limit():
    words = glsl("""#version 450
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) buffer B { uint b[]; };
void main() { uint i = 0u; while (b[0] != 12345u) { i++; } b[1] = i; }""")
    ex = Executor(max_blocks=500)
    with pytest.raises(ExecutionLimitError, match="more than 500 block executions"):
        ex.dispatch(ex.kernel(words), (1, 1, 1), {0: ex.buffer(np.zeros(2, np.uint32))})


def test_absurd_shared_memory_is_refused():
    words = glsl("""#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer B { uint b[]; };
shared uint big[200000000];
void main() { big[7] = 1u; b[0] = big[7]; }""")
    ex = Executor()
    with pytest.raises(InvalidModuleError, match="Workgroup variable big needs 800000000 bytes"):
        ex.dispatch(ex.kernel(words), (4, 1, 1), {0: ex.buffer(8)})
