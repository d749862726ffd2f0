"""Generate the reference executor's coverage table in docs/ref.md from the grammar and the executor.

`PYTHONPATH=src python3 tools/gen_ref_coverage.py` (in the test userland) rewrites the section
of docs/ref.md between the two marker comments; `--check` exits 1 when the committed section
differs (tests/ref/test_ref_coverage.py runs the same comparison). The rule that picks the
instructions valid in a Vulkan compute shader is `RULE` below, printed at the top of the table.
Whether the executor supports one is read from its own tables (the `ref.ops` handlers,
`program.MODULE_OPS` and `FUNCTION_OPS`, `constants.CONSTANT_OPS`, the `ops_glsl` tables),
never from a hand list here.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hydroplane.ref import constants, ops, ops_glsl, program
from hydroplane.spirv import grammar

REPO = Path(__file__).resolve().parent.parent

DOC = REPO / "docs" / "ref.md"
BEGIN = "<!-- BEGIN GENERATED COVERAGE (tools/gen_ref_coverage.py) -->"
END = "<!-- END GENERATED COVERAGE -->"

# Capabilities of other execution models: a capability that is one of these, or implies one, does
# not make an instruction valid in a compute shader.
OTHER_MODEL_CAPABILITIES = frozenset({
    "Kernel",  # OpenCL
    "Geometry", "Tessellation",
    "RayTracingKHR", "RayTracingNV", "RayQueryKHR", "RayTracingMotionBlurNV", "RayQueryPositionFetchKHR",
    "RayTracingSpheresGeometryNV", "RayTracingLinearSweptSpheresGeometryNV", "DisplacementMicromapNV",
    "MeshShadingNV", "MeshShadingEXT",
    "InterpolationFunction", "DemoteToHelperInvocation", "FragmentShaderPixelInterlockEXT",
    "FragmentShaderSampleInterlockEXT", "FragmentShaderShadingRateInterlockEXT", "FragmentMaskAMD",
    "TileImageColorReadAccessEXT", "TileImageDepthReadAccessEXT", "TileImageStencilReadAccessEXT",
    "ShaderEnqueueAMDX",  # execution-graph nodes, not a plain dispatch
    "GraphARM",  # data-graph pipelines
})
# Vendors whose SPIR-V extensions serve OpenCL / SYCL / FPGA compilers rather than Vulkan shaders.
OTHER_API_VENDORS = ("INTEL", "ALTERA")
# Instructions the SPIR-V specification confines to the Fragment execution model, with no capability
# that says so.
FRAGMENT_ONLY = frozenset({"OpKill", "OpTerminateInvocation"})

RULE = """\
Listed: every instruction of the core grammar and of GLSL.std.450 that a Vulkan compute shader can
contain, by this rule on the grammar (`tools/gen_ref_coverage.py`). An instruction qualifies when
it needs no capability or one of its enabling capabilities is *compute-usable*, and it needs no
extension or one of its extensions is of a Vulkan vendor. A capability is compute-usable when
neither it nor any capability it implies (the grammar's implicit declarations, transitively) is
one of another execution model: Kernel (OpenCL); Geometry, Tessellation; ray tracing, ray query,
micromaps; mesh shading; the fragment-only ones (InterpolationFunction, DemoteToHelperInvocation,
fragment-shader interlock, FragmentMaskAMD, tile images); ShaderEnqueueAMDX, GraphARM; and when its
extensions, if any, include one of a Vulkan vendor. Extensions of INTEL and ALTERA are taken as
OpenCL/SYCL/FPGA ones. OpKill and OpTerminateInvocation are left out (Fragment only by the SPIR-V
specification); so are GLSL.std.450's reserved IMix and its fragment-only InterpolateAt*
instructions, which the executor refuses with that reason.

"supported": the executor runs it (module-level and structural instructions are consumed by the
loader and scheduler; a type it does not model is declared opaque, and any instruction that
needs its values is refused). "refused": it raises `UnsupportedInstructionError` naming the
instruction, when the module is loaded (module-level instructions) or when it executes."""


def _capability_closure() -> dict[str, frozenset[str]]:
    caps = {e.name: e for e in grammar.operand_kind("Capability").enumerants}

    def closure(name: str, seen: set[str]) -> set[str]:
        for implied in caps[name].capabilities if name in caps else ():
            if implied not in seen:
                seen.add(implied)
                closure(implied, seen)
        return seen

    return {name: frozenset(closure(name, {name})) for name in caps}


def _vulkan_vendor(extension: str) -> bool:
    return not any(extension.startswith(f"SPV_{vendor}_") for vendor in OTHER_API_VENDORS)


def compute_usable_capabilities() -> frozenset[str]:
    caps = {e.name: e for e in grammar.operand_kind("Capability").enumerants}
    closures = _capability_closure()
    return frozenset(name for name, cap in caps.items()
                     if not closures[name] & OTHER_MODEL_CAPABILITIES
                     and (not cap.extensions or any(map(_vulkan_vendor, cap.extensions))))


def _valid_in_compute(capabilities, extensions, usable) -> bool:
    return ((not capabilities or any(c in usable for c in capabilities))
            and (not extensions or any(map(_vulkan_vendor, extensions))))


def core_support(opcode: int, opclass: str) -> bool:
    """Whether the executor's own tables handle a core instruction."""
    return (opcode in ops.HANDLERS or any(op == opcode for op, _ in ops.TYPED_HANDLERS)
            or opcode in program.MODULE_OPS or opcode in program.FUNCTION_OPS
            or opcode in constants.CONSTANT_OPS or opclass == "Type-Declaration")


def core_rows() -> list[tuple[str, str, str]]:
    usable = compute_usable_capabilities()
    rows = []
    for info in sorted(grammar.INSTRUCTIONS.values(), key=lambda i: (i.opclass, i.opcode)):
        if info.name in FRAGMENT_ONLY or not _valid_in_compute(info.capabilities, info.extensions, usable):
            continue
        status = "supported" if core_support(info.opcode, info.opclass) else "refused"
        rows.append((info.opclass, info.name, status))
    return rows


def glsl_rows() -> list[tuple[int, str, str]]:
    usable = compute_usable_capabilities()
    rows = []
    for number, info in sorted(grammar.EXTINST["GLSL.std.450"].items()):
        if info.name in ops_glsl.GLSL_STD_450_REFUSED or not _valid_in_compute(info.capabilities, info.extensions,
                                                                               usable):
            continue
        rows.append((number, info.name, "supported" if ops_glsl.glsl_std_450_supported(info.name) else "refused"))
    return rows


def _compact(entries: list[str]) -> str:
    return ", ".join(entries) if entries else "none"


def render() -> str:
    core = core_rows()
    glsl = glsl_rows()
    lines = [BEGIN, "", RULE, ""]
    n_core = sum(s == "supported" for _, _, s in core)
    n_glsl = sum(s == "supported" for _, _, s in glsl)
    lines += [f"Core: {n_core} of {len(core)} supported; GLSL.std.450: {n_glsl} of {len(glsl)} supported.", ""]
    lines += ["GLSL.std.450:", "", "| # | instruction | status |", "| --- | --- | --- |"]
    lines += [f"| {n} | {name} | {status} |" for n, name, status in glsl]
    lines += ["", "Core, by instruction class (supported, then refused):", "",
              "| class | supported | refused |", "| --- | --- | --- |"]
    classes: dict[str, tuple[list[str], list[str]]] = {}
    for opclass, name, status in core:
        classes.setdefault(opclass, ([], []))[status == "refused"].append(f"`{name}`")
    for opclass, (yes, no) in classes.items():
        lines.append(f"| {opclass} | {_compact(yes)} | {_compact(no)} |")
    lines += ["", END]
    return "\n".join(lines)


def updated_doc(text: str) -> str:
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{DOC} lacks the coverage markers {BEGIN!r} ... {END!r}")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + render() + tail


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/ref.md is not up to date")
    args = parser.parse_args()
    text = DOC.read_text()
    new = updated_doc(text)
    if args.check:
        if new != text:
            print(f"{DOC} is stale: run PYTHONPATH=src python3 tools/gen_ref_coverage.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
