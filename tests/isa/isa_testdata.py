"""Names of the test data the ISA tests share (imported by the tests and their conftest)."""

EXCERPTS = {"AMD RDNA 3": "amdgpu_isa_rdna3.excerpt.xml", "AMD CDNA 5": "amdgpu_isa_cdna5.excerpt.xml"}
