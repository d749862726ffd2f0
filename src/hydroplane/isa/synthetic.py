"""A synthetic full-size AMD ISA XML file, grown from an excerpt, for speed tests.

AMD's full files are 12-17 MB; the excerpts are 0.4 MB. `grow_excerpt` copies the
excerpt's <Instruction> elements with renamed instruction names (V_X -> V_X_SYN0001, aliases
too) until the file reaches the size asked for, so the importer meets the real element
structure at the real size. The copies are test data only: their names are not AMD's.
"""

from __future__ import annotations

import re

from hydroplane.isa.errors import SpecFormatError

INSTRUCTION = re.compile(rb"[ \t]*<Instruction>.*?</Instruction>\s*\n", re.S)
NAME = re.compile(rb"<InstructionName>([^<]+)</InstructionName>")


def grow_excerpt(excerpt: bytes, target_bytes: int = 12 * 1024 * 1024) -> bytes:
    """The excerpt with renamed copies of its instructions, at least `target_bytes` long."""
    end = excerpt.find(b"</Instructions>")
    if end < 0:
        raise SpecFormatError("excerpt has no </Instructions> to grow")
    originals = INSTRUCTION.findall(excerpt)
    if not originals:
        raise SpecFormatError("excerpt has no <Instruction> element to copy")
    needed = target_bytes - len(excerpt)
    copies, total, serial = [], 0, 0
    while total < needed:
        serial += 1
        suffix = b"_SYN%04d" % serial
        for element in originals:
            copy = NAME.sub(lambda m, suffix=suffix: b"<InstructionName>" + m.group(1) + suffix + b"</InstructionName>",
                            element)
            copies.append(copy)
            total += len(copy)
    line_start = excerpt.rfind(b"\n", 0, end) + 1
    return excerpt[:line_start] + b"".join(copies) + excerpt[line_start:]
