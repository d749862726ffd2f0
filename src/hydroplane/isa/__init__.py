"""hydroplane.isa: AMD's native GPU ISA from AMD's machine-readable XML.

Stands alone (imports only hydroplane.errors). Import an XML file or AMD's zip
(`IsaLibrary.open`), query instructions across architectures, encode and decode machine
words (`codec`, `syntax`), run a curated family's semantics (`semantics.execute`) and render
reference pages (`page`, `page_html`). See docs/isa.md.
"""

from hydroplane.isa.codec import Decoded, decode, encode
from hydroplane.isa.errors import (
    AssemblyError,
    DecodeError,
    EncodeError,
    IsaError,
    SemanticsError,
    SpecFormatError,
    SpecNotFoundError,
    UnknownNameError,
)
from hydroplane.isa.library import Comparison, IsaLibrary
from hydroplane.isa.semantics import SEMANTICS, execute
from hydroplane.isa.sources import SpecCache, cache_dir, xml_sources
from hydroplane.isa.spec import Spec
from hydroplane.isa.syntax import assemble, disassemble
from hydroplane.isa.targets import GFX_TARGETS, arch_key, architecture_of_target, targets_of
from hydroplane.isa.xml_import import import_xml

__all__ = [
    "AssemblyError", "Comparison", "DecodeError", "Decoded", "EncodeError", "GFX_TARGETS", "IsaError",
    "IsaLibrary", "SEMANTICS", "SemanticsError", "Spec", "SpecCache", "SpecFormatError", "SpecNotFoundError",
    "UnknownNameError", "arch_key", "architecture_of_target", "assemble", "cache_dir", "decode",
    "disassemble", "encode", "execute", "import_xml", "targets_of", "xml_sources",
]
