"""Fuzz: 20,000+ mutated binaries fed to decode and disassemble; only SpirvError comes out,
and the text of each input stays linear in its size (no wall clock: a loaded machine would fail it).

Seeds are windows of the glslang corpus (the module's first N instructions, or a random run
of instructions behind the header) and hand-written modules (no builder involved). The
seeded mutator flips bits, overwrites, deletes and inserts words, corrupts word counts and
opcodes, and truncates (also to a length that is not a whole number of words).
"""

from __future__ import annotations

import random
import traceback
from array import array

from spirv_corpus import corpus_binaries  # noqa: F401  (fixture)

from hydroplane.spirv import binary, grammar, text
from hydroplane.spirv.binary import SpirvError

MUTANTS = 30_000
SEED = 20260
TEXT_CHARS_PER_WORD = 64  # disassembly of a module: at most this many characters per word (plus a header)

HAND_WRITTEN = [
    """
               OpCapability Shader
               OpCapability Int64
               OpCapability Float64
               OpCapability Float16
         %gl = OpExtInstImport "GLSL.std.450"
         %ns = OpExtInstImport "NonSemantic.Fuzz"
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main" %gid
               OpExecutionMode %main LocalSize 8 8 1
               OpName %main "main"
               OpName %x "x"
               OpName %x2 "x"
               OpDecorate %gid BuiltIn GlobalInvocationId
               OpDecorate %sc SpecId 1
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %bool = OpTypeBool
       %uint = OpTypeInt 32 0
       %long = OpTypeInt 64 1
      %float = OpTypeFloat 32
       %half = OpTypeFloat 16
     %double = OpTypeFloat 64
     %v3uint = OpTypeVector %uint 3
      %ptr_i = OpTypePointer Input %v3uint
      %ptr_f = OpTypePointer Function %float
        %gid = OpVariable %ptr_i Input
          %x = OpConstant %uint 7
         %x2 = OpConstant %long -8589934592
         %h1 = OpConstant %half 0x1.8p+1
         %d1 = OpConstant %double 2.5
         %f1 = OpConstant %float 1e-40
         %sc = OpSpecConstant %uint 3
         %so = OpSpecConstantOp %uint IAdd %sc %x
       %main = OpFunction %void Inline %fn
      %entry = OpLabel
          %v = OpVariable %ptr_f Function
         %ld = OpLoad %float %v Volatile|Aligned 4
         %sq = OpExtInst %float %gl Sqrt %ld
         %nn = OpExtInst %void %ns 3 %sq
         %cv = OpConvertFToS %long %ld
               OpSelectionMerge %done None
               OpSwitch %cv %done -1 %a 4294967296 %done
          %a = OpLabel
               OpLoopMerge %done %a Unroll|MaxIterations 8
               OpBranchConditional %true %a %done
       %true = OpConstantTrue %bool
       %done = OpLabel
               OpReturn
               OpFunctionEnd
""",
    """
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpSource GLSL 450 %file "text with \\"quotes\\" and \\\\"
       %file = OpString "a.comp"
               OpLine %file 3 7
               OpModuleProcessed "fuzz"
""",
]


def seeds(corpus: dict[str, bytes], rng: random.Random) -> list[array]:
    out = [text.assemble(s) for s in HAND_WRITTEN]
    for data in corpus.values():
        words = binary.as_words(data)
        starts = []
        pos = binary.HEADER_WORDS
        while pos < len(words):
            starts.append(pos)
            pos += words[pos] >> 16
        starts.append(len(words))
        header = list(words[:binary.HEADER_WORDS])
        for _ in range(3):  # the first N instructions: types and constants give literals their widths
            n = rng.randrange(1, min(len(starts), 160))
            out.append(array("I", header + list(words[binary.HEADER_WORDS:starts[n]])))
        for _ in range(3):  # a run from anywhere
            a = rng.randrange(len(starts) - 1)
            b = min(len(starts) - 1, a + rng.randrange(1, 60))
            out.append(array("I", header + list(words[starts[a]:starts[b]])))
    return out


INTERESTING = [0, 1, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFF, 0x10000, binary.MAGIC, 5, 0x00010600]
OPCODES = sorted(grammar.INSTRUCTIONS)


def mutate(words: array, rng: random.Random) -> array | bytes:
    w = list(words)
    for _ in range(rng.choice((1, 1, 2, 3, 5))):
        if not w:
            break
        i = rng.randrange(len(w))
        choice = rng.randrange(10)
        if choice == 0:
            w[i] ^= 1 << rng.randrange(32)
        elif choice == 1:
            w[i] = rng.choice(INTERESTING)
        elif choice == 2:
            w[i] = rng.getrandbits(32)
        elif choice == 3:
            del w[i]
        elif choice == 4:
            w.insert(i, rng.choice((rng.getrandbits(32), rng.choice(INTERESTING), w[i])))
        elif choice == 5:  # word count corruption
            w[i] = (rng.choice((0, 1, 2, 3, rng.randrange(0x10000))) << 16) | (w[i] & 0xFFFF)
        elif choice == 6:  # a different (known) opcode, same count
            w[i] = (w[i] & 0xFFFF0000) | rng.choice(OPCODES)
        elif choice == 7:  # truncate
            del w[i:]
        elif choice == 8 and i >= binary.HEADER_WORDS:  # a known enumerant-sized value
            w[i] = rng.randrange(64)
        else:  # swap two words
            j = rng.randrange(len(w))
            w[i], w[j] = w[j], w[i]
    out = array("I", w)
    if rng.randrange(20) == 0:  # bytes whose length is not a whole number of words
        return out.tobytes()[:rng.randrange(max(1, len(w) * 4))]
    return out


def test_mutated_binaries_raise_only_spirv_error(corpus_binaries):
    rng = random.Random(SEED)
    pool = seeds(corpus_binaries, rng)
    decoded = rejected = 0
    longest = 0.0
    failures = []
    for n in range(MUTANTS):
        mutant = mutate(rng.choice(pool), rng)
        try:
            module = binary.decode(mutant)
            listing = text.disassemble(module, raw_id=bool(n & 1))
            words = len(mutant) if isinstance(mutant, array) else len(mutant) // 4
            longest = max(longest, len(listing) / (words + 16))
            decoded += 1
        except SpirvError as exc:
            assert exc.offset is None or 0 <= exc.offset <= len(mutant)
            rejected += 1
        except Exception:  # anything else is a bug: keep the input to reproduce it
            failures.append((n, list(mutant) if isinstance(mutant, array) else mutant, traceback.format_exc()))
    assert not failures, f"{len(failures)} inputs raised other errors; first: {failures[0]}"
    assert decoded + rejected == MUTANTS
    assert decoded > MUTANTS // 20 and rejected > MUTANTS // 4, (decoded, rejected)  # both paths exercised
    assert longest < TEXT_CHARS_PER_WORD, longest


def test_disassemble_of_words_matches_decode_errors():
    """disassemble() of raw words raises the decoder's SpirvError, not something else."""
    rng = random.Random(SEED + 1)
    base = text.assemble(HAND_WRITTEN[0])
    for _ in range(500):
        mutant = mutate(base, rng)
        try:
            expected = binary.decode(mutant)
        except SpirvError as exc:
            try:
                text.disassemble(mutant)
            except SpirvError as again:
                assert str(again) == str(exc)
            else:
                raise AssertionError("disassemble accepted what decode rejects")
        else:
            assert text.disassemble(mutant) == text.disassemble(expected)


def mutate_text(source: str, rng: random.Random) -> str:
    tokens = source.split(" ")
    for _ in range(rng.choice((1, 2, 3))):
        if not tokens:
            break
        i = rng.randrange(len(tokens))
        choice = rng.randrange(6)
        if choice == 0:
            del tokens[i]
        elif choice == 1:
            tokens.insert(i, rng.choice(tokens))
        elif choice == 2:
            tokens[i] = rng.choice(("%", "=", '"', "0x", "-", "|", "1e999", "%0", "%4294967296", "OpNop", "\n", "2x2",
                                    "%4294967295", "0x1p+999", "-0x", "99999999999999999999", "Op", "None|", ";", "\\",
                                    "1e999999999", "0x1p-99999999", "9" * 6000, "%é", "Öp", "\x00"))
        elif choice == 3 and tokens[i]:
            j = rng.randrange(len(tokens[i]))
            tokens[i] = tokens[i][:j] + chr(rng.randrange(32, 127)) + tokens[i][j + 1:]
        elif choice == 4:
            del tokens[i:]
        else:
            j = rng.randrange(len(tokens))
            tokens[i], tokens[j] = tokens[j], tokens[i]
    return " ".join(tokens)


def test_mutated_assembly_raises_only_spirv_error():
    """The assembler, too: bad text gives AssemblyError (a SpirvError) with line and column."""
    rng = random.Random(SEED + 2)
    sources = [text.disassemble(text.assemble(s), raw_id=raw) for s in HAND_WRITTEN for raw in (False, True)]
    accepted = 0
    for _ in range(3000):
        mutant = mutate_text(rng.choice(sources), rng)
        try:
            text.assemble(mutant, preserve_numeric_ids=rng.randrange(2) == 1)
            accepted += 1
        except text.AssemblyError as exc:
            assert exc.line >= 1 and exc.column >= 1
        except SpirvError:
            pass
    assert 0 < accepted < 3000
