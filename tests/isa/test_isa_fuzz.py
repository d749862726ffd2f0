"""Bad input of every kind ends in an IsaError, never another exception (property tests)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from isa_testdata import CDNA5, isa_files, library, private_cache  # noqa: F401 (pytest fixtures)

from hydroplane.isa import IsaError, decode, import_xml
from hydroplane.isa.syntax import assemble, disassemble

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
TOKENS = ["v_cvt_off_f32_i4", "v_cvt_f32_f64", "v_mov_b16", "v_pipeflush", "v5", "v[2:3]", "s[3:4]", "s7",
          "v1.h", "v300", "vcc", "exec", "m0", "null", "-16", "65", "0.5", "1.5", "0x1234", "lit(5)",
          "lit64(0x123456789)", "1e99", "nan", ",", " ", "[", "]", "ttmp[2:3]", "src_scc", "src_literal"]


# random bytes, and random VOP1-looking words (top bits 0111111) with random trailing dwords
VOP1_WORDS = st.tuples(st.integers(0, 2 ** 25 - 1), st.binary(max_size=8)).map(
    lambda t: (0x7E000000 | t[0]).to_bytes(4, "little") + t[1])


@FAST
@given(data=st.one_of(st.binary(min_size=0, max_size=16), VOP1_WORDS))
def test_decode_random_bytes(library, data):
    for arch in library.architectures:
        spec = library.spec(arch)
        try:
            decoded = decode(spec, data)
        except IsaError:
            continue
        text = disassemble(spec, decoded)
        # whatever decodes re-assembles to itself, less the bits it does not use
        clean = int.from_bytes(decoded.data, "little") & ~decoded.unused_bits
        assert assemble(spec, text)[0] == clean.to_bytes(decoded.length, "little"), text


@FAST
@given(parts=st.lists(st.sampled_from(TOKENS), min_size=1, max_size=6))
def test_assemble_token_soup(library, parts):
    line = parts[0] + " " + "".join(parts[1:])
    for arch in library.architectures:
        try:
            data, instruction, form = assemble(library.spec(arch), line)
        except IsaError:
            continue
        assert decode(library.spec(arch), data).instruction.name == instruction.name


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=400_000), junk=st.binary(max_size=8))
def test_import_damaged_xml(isa_files, cut, junk):
    original = isa_files.read(CDNA5)
    damaged = original[:cut] + junk + original[cut + len(junk):]
    try:
        import_xml(damaged, "damaged.xml")
    except IsaError:
        pass
