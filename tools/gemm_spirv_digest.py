"""A digest of the GEMM kernels' SPIR-V that matters for speed, to show that a refactoring of kernels/gemm/ leaves the
code the driver sees as it was (issue 16: the kernels as composable pieces, at the same speed).

For each configuration (every shipped H200 winner of ops/gemm_table.json and the first candidates the H200
benchmark tunes, for `Target.profile("nvidia-h200")`; lavapipe's shipped winners and candidates for
`Target.profile("lavapipe")`; a few epilogue and edge variants) the kernel is compiled as a launcher compiles it
(`gemm_plan(...).kernel.compile(target, **constexprs)`, then lowered for the target) and digested at two levels:

- `inlined`: the entry point with every OpFunctionCall replaced by the callee's body (parameters bound to the call's
  arguments, the callee's own entry label, OpFunction*, OpReturn dropped; a single OpReturnValue becomes the call's
  result), OpName/OpLine/debug instructions left out, Function-storage OpVariables counted apart from the stream
  (where a helper declares its locals is no matter of speed), every id written as what it is (a type or constant by
  its definition, a run-time value by the order of first appearance), so that the stream also compares data flow.
  Recorded: the count of each opcode over the module (globals and inlined stream), and the instruction sequence of
  every loop that holds a cooperative-matrix MulAdd (the main K loop among them), numbered within the loop.
- `optimized` (where spirv-opt is installed: the test userland): the same digest of `spirv-opt -O` of the module, so
  that a difference at the first level that an optimizing compiler removes (a value passed through a helper's
  parameter instead of a load of a local variable) shows as none here.

    mkdir -p build/before && git archive HEAD | tar -x -C build/before    # the tree before a change, apart
    ul python3 build/before/tools/gemm_spirv_digest.py --write build/digest_before.json
    ul python3 tools/gemm_spirv_digest.py --compare build/digest_before.json   # after it: prints differences

(the tool imports the hydroplane beside it, so a copy of the tree before the change digests that tree; work in
progress elsewhere in a shared working tree, on the language say, stays out of the comparison). About 3 minutes
per digest on one core.

It exits 1 when --compare finds a difference beyond a function's local-variable traffic (per configuration: which
opcodes' counts moved, and where each loop's instruction sequence first differs); differences in that traffic alone
(OpVariable, OpLoad, OpStore, OpAccessChain of Function storage, which optimizing compilers turn into registers)
are listed as "local".
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from hydroplane.kernels.gemm import GemmConfig, GemmProblem, candidate_configs, gemm_plan, parse_dtype  # noqa: E402
from hydroplane.kernels.gemm.route import (  # noqa: E402
    GemvConfig,
    SplitConfig,
    config_from_dict,
    gemm_route,
    route_candidates,
)
from hydroplane.spirv import grammar  # noqa: E402
from hydroplane.spirv.binary import decode  # noqa: E402
from hydroplane.spirv.compiled import compile_kernel  # noqa: E402
from hydroplane.spirv.target import Target  # noqa: E402

TABLE = ROOT / "src" / "hydroplane" / "ops" / "gemm_table.json"
DEBUG = {"OpName", "OpMemberName", "OpLine", "OpNoLine", "OpSource", "OpSourceContinued", "OpSourceExtension",
         "OpString", "OpModuleProcessed", "OpExtInst@debug"}
BOUNDARY = {"OpFunction", "OpFunctionParameter", "OpFunctionEnd", "OpFunctionCall", "OpReturn"}
POINTER_RESULT = {"OpAccessChain", "OpInBoundsAccessChain", "OpPtrAccessChain"}
POINTER_OPERAND = {"OpLoad", "OpStore", "OpCooperativeMatrixLoadKHR", "OpCooperativeMatrixStoreKHR", "OpAtomicIAdd"}
STORAGE = {0: "UniformConstant", 1: "Input", 2: "Uniform", 4: "Workgroup", 6: "Private", 7: "Function",
           9: "PushConstant", 12: "StorageBuffer"}
# A function's local variables and their traffic: what an optimizing compiler (mem2reg, scalar replacement after
# inlining) turns into registers, so that where a helper keeps a value (a parameter or a local) is no matter of speed.
LOCAL = {"OpVariable@Function", "OpLoad@Function", "OpStore@Function", "OpAccessChain@Function"}
UNKNOWN_TO_SPIRV_OPT = {"SPV_NV_cooperative_matrix2", "SPV_KHR_bfloat16", "SPV_EXT_float8"}
MULADD = {"OpCooperativeMatrixMulAddKHR", "OpCooperativeMatrixMulAddNV"}
CANDIDATES_PER_PROBLEM = 8  # the H200 benchmark tunes the first 6 (--max-candidates)


class Canon:
    """Canonical text of a module's instructions: ids as what they are, calls inlined into the entry point."""

    def __init__(self, words):
        self.module = decode(words)
        self.defs = {}  # global result id -> instruction
        self.decorations: dict[int, list[str]] = {}
        self.functions: dict[int, list] = {}
        self.entry = None
        self.globals = []  # the instructions outside functions
        self._global_text: dict[int, str] = {}
        self._function_text: dict[int, str] = {}
        current = None
        for inst in self.module.instructions:
            name = inst.name
            if name == "OpFunction":
                current = self.functions.setdefault(inst.result_id, [])
            if current is not None:
                current.append(inst)
                if name == "OpFunctionEnd":
                    current = None
                continue
            self.globals.append(inst)
            if name == "OpEntryPoint":
                self.entry = inst.operands[1].value
            if name in ("OpDecorate", "OpMemberDecorate"):
                target = inst.operands[0].value
                self.decorations.setdefault(target, []).append(
                    " ".join(str(o.value) for o in inst.operands[1:]))
            if inst.result_id is not None:
                self.defs[inst.result_id] = inst

    def global_text(self, rid: int) -> str:
        """A global (type, constant, variable) by its definition and decorations."""
        if rid in self._global_text:
            return self._global_text[rid]
        self._global_text[rid] = f"<cycle {rid}>"
        inst = self.defs[rid]
        parts = [inst.name[2:]]
        if inst.result_type is not None:
            parts.append(self.global_text(inst.result_type))
        for o in inst.operands:
            parts.append(self.global_text(o.value) if o.kind in grammar.ID_KINDS and o.value in self.defs
                         else str(o.value))
        parts += sorted(self.decorations.get(rid, []))
        text = "(" + " ".join(parts) + ")"
        self._global_text[rid] = text
        return text

    def function_text(self, fid: int) -> str:
        """A function referred to as an operand (a coop.map callback): by a hash of its own inlined stream."""
        if fid not in self._function_text:
            self._function_text[fid] = "<recursive>"
            stream = Stream(self)
            stream.expand(fid, None)
            self._function_text[fid] = "fn:" + hashlib.sha256("\n".join(stream.lines).encode()).hexdigest()[:12]
        return self._function_text[fid]


class Stream:
    """The inlined instruction stream of one function: canonical lines, loop spans, Function variables apart."""

    def __init__(self, canon: Canon):
        self.canon = canon
        self.lines: list[str] = []
        self.opcodes: Counter = Counter()
        self.variables: Counter = Counter()
        self.keys: list[str] = []  # per line: the opcode, memory instructions with their storage class
        self.type_of: dict[str, str] = {}  # run-time value token -> its type's text
        self.loops: list[tuple[int, str]] = []  # (start line, merge token) of each OpLoopMerge's loop
        self.spans: list[tuple[int, int]] = []
        self.label_at: dict[str, int] = {}
        self._next = 0
        self._instance = 0

    def fresh(self) -> str:
        self._next += 1
        return f"v{self._next}"

    def token(self, names: dict, rid: int) -> str:
        if rid in names:
            return names[rid]
        if rid in self.canon.defs:
            return self.canon.global_text(rid)
        if rid in self.canon.functions:
            return self.canon.function_text(rid)
        names[rid] = self.fresh()
        return names[rid]

    def expand(self, fid: int, arguments: list[str] | None) -> str | None:
        """Append function fid's body; arguments: the caller's tokens (None: the entry point or a callback)."""
        body = self.canon.functions[fid]
        names: dict[int, str] = {}
        params = [i for i in body if i.name == "OpFunctionParameter"]
        for index, p in enumerate(params):
            names[p.result_id] = arguments[index] if arguments is not None else f"param{index}"
        returns = [i for i in body if i.name == "OpReturnValue"]
        result = None
        if len(returns) > 1:
            self._instance += 1
            result = f"ret{self._instance}"
        first_label = next(i for i in body if i.name == "OpLabel")
        for inst in body:
            name = inst.name
            if name in BOUNDARY and name != "OpFunctionCall" or name in DEBUG:
                continue
            if inst is first_label and arguments is not None:
                names[inst.result_id] = self.fresh()  # the callee's entry block continues the caller's
                continue
            if name == "OpFunctionCall":
                callee = inst.operands[0].value
                args = [self.token(names, o.value) for o in inst.operands[1:]]
                value = self.expand(callee, args)
                if inst.result_id is not None:
                    names[inst.result_id] = value if value is not None else self.fresh()
                continue
            if name == "OpReturnValue" and arguments is not None:
                value = self.token(names, inst.operands[0].value)
                if result is None:
                    result = value  # the one return: the call's result is this value
                    continue
                self._emit(f"ReturnValue {result} {value}", name)
                continue
            if name == "OpVariable":
                self.variables[self.canon.global_text(inst.result_type)] += 1
                self.opcodes[self.memory_key(name, self.canon.global_text(inst.result_type))] += 1
                self.type_of[self.token(names, inst.result_id)] = self.canon.global_text(inst.result_type)
                continue
            parts = [name[2:]]
            if inst.result_id is not None:
                parts.append(self.token(names, inst.result_id) + " =")
            if inst.result_type is not None:
                parts.append(self.canon.global_text(inst.result_type))
            for o in inst.operands:
                parts.append(self.token(names, o.value) if o.kind in grammar.ID_KINDS else str(o.value))
            line = " ".join(parts)
            if inst.result_id is not None and inst.result_type is not None:
                self.type_of[self.token(names, inst.result_id)] = self.canon.global_text(inst.result_type)
            key = name
            if name in POINTER_RESULT:
                key = self.memory_key(name, self.canon.global_text(inst.result_type))
            elif name in POINTER_OPERAND:
                key = self.memory_key(name, self.pointer_type(self.token(names, inst.operands[0].value)))
            if name == "OpLabel":
                self.label_at[parts[1][:-2]] = len(self.lines)
            if name == "OpLoopMerge":
                header = max(at for at in self.label_at.values() if at <= len(self.lines))
                self.loops.append((header, self.token(names, inst.operands[0].value)))
            self._emit(line, key)
        return result

    def pointer_type(self, token: str) -> str:
        """The type text of a pointer: a run-time one's result type, a global variable's own."""
        if token in self.type_of:
            return self.type_of[token]
        if token.startswith("(Variable "):
            return token[len("(Variable "):]
        return token

    @staticmethod
    def memory_key(name: str, pointer_type: str) -> str:
        """A memory instruction's key: its name and the storage class it reaches (OpLoad@Function ...)."""
        match = re.match(r"\(TypePointer (\d+)", pointer_type)
        return f"{name}@{STORAGE.get(int(match.group(1)), match.group(1)) if match else '?'}"

    def _emit(self, line: str, key: str) -> None:
        self.lines.append(line)
        self.keys.append(key)
        self.opcodes[key] += 1

    def loop_spans(self) -> list[tuple[int, int]]:
        return [(start, self.label_at.get(merge, len(self.lines))) for start, merge in self.loops]


def renumbered(lines: list[str]) -> list[str]:
    """Lines with run-time value tokens numbered from 1 within them (v17 -> v1 ...), so that a loop compares alone."""
    mapping: dict[str, str] = {}
    out = []
    for line in lines:
        words = []
        for word in line.split(" "):
            if word.startswith(("v", "ret")) and word.lstrip("vret").isdigit():
                word = mapping.setdefault(word, f"v{len(mapping) + 1}")
            words.append(word)
        out.append(" ".join(words))
    return out


def digest_words(words) -> dict:
    canon = Canon(words)
    stream = Stream(canon)
    stream.expand(canon.entry, None)
    counts = Counter(i.name for i in canon.globals if i.name not in DEBUG)
    counts.update(stream.opcodes)
    loops = []
    for start, end in stream.loop_spans():
        span = stream.lines[start:end]
        muladds = sum(1 for key in stream.keys[start:end] if key in MULADD)
        if muladds:
            loops.append({"muladds": muladds, "instructions": len(span), "lines": renumbered(span),
                          "core": [key for key in stream.keys[start:end] if key not in LOCAL]})
    callbacks = sorted(v for v in canon._function_text.values())
    return {"opcodes": dict(sorted(counts.items())), "variables": dict(sorted(stream.variables.items())),
            "loops": loops, "callbacks": callbacks,
            "stream_sha256": hashlib.sha256("\n".join(stream.lines).encode()).hexdigest()}


def optimized(words) -> list[int] | None:
    """spirv-opt -O of the module. Its memory-to-register passes skip a module that declares an extension they do
    not know (NV2, bfloat16, float8), so those declarations are left out of its input (and validation skipped): the
    result is compared, never run."""
    tool = shutil.which("spirv-opt")
    if tool is None:
        return None
    module = decode(words)
    module.instructions = [i for i in module.instructions if not (
        i.name == "OpExtension" and i.operands[0].value in UNKNOWN_TO_SPIRV_OPT)]
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.spv", Path(tmp) / "out.spv"
        src.write_bytes(module.words().tobytes())
        done = subprocess.run([tool, "-O", "--skip-validation", "--target-env=vulkan1.3", str(src), "-o", str(dst)],
                              capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"spirv-opt failed: {done.stderr.strip()[:400]}")
        data = dst.read_bytes()
    return list(memoryview(data).cast("I"))


def cases() -> list[tuple[str, str, GemmProblem, GemmConfig | GemvConfig | SplitConfig]]:
    """(label, profile, problem, config): the H200's shipped winners (the skinny and K-split kernels' too) and
    benchmark candidates, lavapipe's, variants, and K-split candidates of LLM prefill shapes."""
    found = []
    table = json.loads(TABLE.read_text())["devices"]
    for device, entries in table.items():
        profile = "nvidia-h200" if device.startswith("NVIDIA H200") else "lavapipe"
        for key, entry in entries.items():
            dtype, layout, _ = key.split()
            problem = GemmProblem(*entry["size"], parse_dtype(dtype), layout)
            found.append((f"{profile} shipped {key}", profile, problem, config_from_dict(entry["config"])))
    for dtype, size in (("f16:f32", (512, 4096, 14336)), ("f16:f16", (512, 4096, 14336)),
                        ("f16:f32", (256, 1024, 4096)), ("s8:s32", (512, 4096, 14336))):
        problem = GemmProblem(*size, parse_dtype(dtype), "nt")
        h200 = Target.profile("nvidia-h200")
        split = [c for c in route_candidates(problem, h200) if isinstance(c, SplitConfig)]
        for index, config in enumerate(split[:4]):
            found.append((f"nvidia-h200 splitk {problem.describe()} #{index}", "nvidia-h200", problem, config))
    h200, lavapipe = Target.profile("nvidia-h200"), Target.profile("lavapipe")
    for dtype, layouts in (("f16:f16", "nn"), ("f16:f32", "nn"), ("bf16:f32", "nn"), ("s8:s32", "nn nt"),
                           ("u8:u32", "nn nt")):
        for layout in layouts.split():
            problem = GemmProblem(8192, 8192, 8192, parse_dtype(dtype), layout)
            for index, config in enumerate(candidate_configs(problem, h200)[:CANDIDATES_PER_PROBLEM]):
                found.append((f"nvidia-h200 candidate {dtype} {layout} 8192 #{index}", "nvidia-h200", problem, config))
    variants = (dict(beta=1.0, bias=True, activation="relu", alpha=2.0), dict(alpha=1.5, activation="gelu"))
    for profile, target in (("nvidia-h200", h200), ("lavapipe", lavapipe)):
        for dtype in ("f16:f32", "s8:s32", "f16:f16"):
            for layout in ("nn", "tn"):
                for size, options in (((4096, 4096, 4080), variants[0]), ((1000, 33, 255), variants[1] if
                                                                          dtype != "s8:s32" else variants[0])):
                    problem = GemmProblem(*size, parse_dtype(dtype), layout, **options)
                    for index, config in enumerate(candidate_configs(problem, target)[:CANDIDATES_PER_PROBLEM]):
                        found.append((f"{profile} variant {problem.describe()} #{index}", profile, problem, config))
    return found


def digest_all(with_optimized: bool) -> dict:
    out = {}
    targets = {name: Target.profile(name) for name in ("nvidia-h200", "lavapipe")}
    for label, profile, problem, config in cases():
        target = targets[profile]
        if isinstance(config, GemmConfig):
            plan = gemm_plan(problem, config, target)
            kernel, constexprs = plan.kernel, plan.constexprs
        else:  # the skinny and K-split kernels: the route's multiplying step, unpadded
            step = gemm_route(problem, config, target, pad=False).main
            kernel, constexprs = step.kernel, step.constexprs
        spec = kernel.compile(target, **constexprs)
        words = compile_kernel(spec.words, target).words
        entry = {"config": config.describe(), "words": len(words), "inlined": digest_words(words)}
        if with_optimized:
            opt = optimized(words)
            if opt is not None:
                entry["optimized"] = digest_words(opt)
        out[label] = entry
        print(f"{label}: {len(words)} words, {sum(entry['inlined']['opcodes'].values())} instructions inlined",
              file=sys.stderr, flush=True)
    return out


def differences(before: dict, after: dict) -> tuple[list[str], list[str]]:
    """(core, local): the differences in instructions other than a function's local-variable traffic (LOCAL) and
    helper function types, and those in that traffic alone, per configuration and level."""
    core, local = [], []
    for label in sorted(set(before) | set(after)):
        if label not in after or label not in before:
            core.append(f"{label}: only {'before' if label in before else 'after'}")
            continue
        for level in ("inlined", "optimized"):
            b, a = before[label].get(level), after[label].get(level)
            if b is None or a is None:
                continue
            where = f"{label} [{level}]"
            moved = {k: (b["opcodes"].get(k, 0), a["opcodes"].get(k, 0))
                     for k in set(b["opcodes"]) | set(a["opcodes"]) if b["opcodes"].get(k, 0) != a["opcodes"].get(k, 0)}
            text = {k: f"{k} {x}->{y}" for k, (x, y) in sorted(moved.items())}
            if any(k not in LOCAL | {"OpTypeFunction"} for k in moved):
                core.append(f"{where} counts: " + ", ".join(v for k, v in text.items() if k not in LOCAL))
            if any(k in LOCAL | {"OpTypeFunction"} for k in moved):
                local.append(f"{where} local traffic: " + ", ".join(
                    v for k, v in text.items() if k in LOCAL | {"OpTypeFunction"}))
            if len(b["loops"]) != len(a["loops"]):
                core.append(f"{where} loops with MulAdd: {len(b['loops'])} -> {len(a['loops'])}")
            for index, (lb, la) in enumerate(zip(b["loops"], a["loops"])):
                if lb["core"] != la["core"]:
                    at = next((i for i, (x, y) in enumerate(zip(lb["core"], la["core"])) if x != y),
                              min(len(lb["core"]), len(la["core"])))
                    core.append(f"{where} loop {index} ({lb['muladds']} MulAdd): the instruction sequence without "
                                f"local traffic differs at {at} of {len(lb['core'])}: "
                                f"{lb['core'][at:at + 3]} -> {la['core'][at:at + 3]}")
                elif lb["lines"] != la["lines"]:
                    local.append(f"{where} loop {index} ({lb['muladds']} MulAdd, {lb['instructions']} -> "
                                 f"{la['instructions']} instructions): the same sequence but for local traffic")
            if b["callbacks"] != a["callbacks"]:
                core.append(f"{where} coop.map callbacks differ")
            if b["stream_sha256"] != a["stream_sha256"] and not moved:
                local.append(f"{where} the inlined stream differs (same counts: order or data flow)")
    return core, local


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, help="write the digest (JSON) here")
    parser.add_argument("--compare", type=Path, help="compare with a digest written before; exit 1 on a difference")
    parser.add_argument("--no-optimized", action="store_true", help="skip the spirv-opt level")
    args = parser.parse_args()
    digest = digest_all(not args.no_optimized)
    if args.write:
        args.write.write_text(json.dumps(digest, indent=1, sort_keys=True))
    print(f"{len(digest)} configurations digested")
    if args.compare:
        core, local = differences(json.loads(args.compare.read_text()), digest)
        for line in local:
            print("local:", line)
        for line in core:
            print("CORE:", line)
        print(f"against {args.compare}: {len(core)} differences beyond local-variable traffic, {len(local)} in it")
        return 1 if core else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
