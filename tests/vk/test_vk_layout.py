"""Our ctypes declarations against the real Vulkan headers: struct layouts, sType and enum values,
entry-point prototypes, and the VkResult table. A C program is compiled with gcc against
<vulkan/vulkan.h> (libvulkan-dev in the test userland) and its output compared with ctypes."""

from __future__ import annotations

import ctypes
import inspect
import re
import subprocess
from pathlib import Path

import pytest
from conftest import require_tool
from vk_support import validated_instance  # noqa: F401 - autouse

from hydroplane.vk import _ffi, enums, results, structs, structs_caps

HEADER = Path("/usr/include/vulkan/vulkan_core.h")
ALL_STRUCTS = structs.STRUCTS + structs_caps.STRUCTS
_STYPE_COMMENT = re.compile(r"^class (\w+)\(_Struct\):\n    STYPE = (\d+)  # (VK_STRUCTURE_TYPE_\w+)$", re.M)


def _stype_names() -> dict[str, str]:
    """struct name -> the VK_STRUCTURE_TYPE_* name written beside its STYPE."""
    text = inspect.getsource(structs) + inspect.getsource(structs_caps)
    return {name: const for name, _, const in _STYPE_COMMENT.findall(text)}


def _enum_constants() -> dict[str, int]:
    return {k: v for k, v in vars(enums).items() if k.startswith("VK_") and isinstance(v, int)}


def _c_program() -> str:
    lines = ["#include <vulkan/vulkan.h>", "#include <stdio.h>", "#include <stddef.h>", ""]
    for proto in _ffi.PROTOTYPES + _ffi.EXTENSION_PROTOTYPES:
        restype, name, _ = _ffi.parse_prototype(proto)
        lines.append(f"typedef {proto.replace(name + '(', 'hp_' + name + '_t(', 1)};")
        lines.append(f"_Static_assert(__builtin_types_compatible_p(hp_{name}_t, __typeof__({name})), "
                     f"\"prototype of {name} differs from vulkan_core.h\");")
    lines += ["int main(void) {"]
    for struct in ALL_STRUCTS:
        name = struct.__name__
        lines.append(f'  printf("size {name} %zu\\n", sizeof({name}));')
        for field, _ in struct._fields_:
            lines.append(f'  printf("offset {name}.{field} %zu\\n", offsetof({name}, {field}));')
    for name, const in _stype_names().items():
        lines.append(f'  printf("stype {name} %lld\\n", (long long){const});')
    for name in _enum_constants():
        lines.append(f'  printf("enum {name} %llu\\n", (unsigned long long)({name}));')
    lines += ["  return 0;", "}"]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def header_facts(tmp_path_factory) -> dict[str, int]:
    gcc = require_tool("gcc")
    work = tmp_path_factory.mktemp("layout")
    (work / "layout.c").write_text(_c_program())
    proc = subprocess.run([gcc, "-std=c11", "-Wall", "-Werror", "-o", str(work / "layout"), str(work / "layout.c")],
                          capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        pytest.fail(f"the layout program does not compile against vulkan.h:\n{proc.stderr[-6000:]}")
    out = subprocess.run([str(work / "layout")], capture_output=True, text=True, timeout=60, check=True).stdout
    return {f"{kind} {key}": int(value) for kind, key, value in (line.split() for line in out.splitlines())}


def test_every_struct_size_matches_the_header(header_facts):
    assert len(ALL_STRUCTS) > 80
    wrong = {s.__name__: (ctypes.sizeof(s), header_facts[f"size {s.__name__}"]) for s in ALL_STRUCTS
             if ctypes.sizeof(s) != header_facts[f"size {s.__name__}"]}
    assert not wrong, f"(ctypes, C) sizes differ: {wrong}"


def test_every_field_offset_matches_the_header(header_facts):
    wrong = {}
    for struct in ALL_STRUCTS:
        for field, _ in struct._fields_:
            ours = getattr(struct, field).offset
            theirs = header_facts[f"offset {struct.__name__}.{field}"]
            if ours != theirs:
                wrong[f"{struct.__name__}.{field}"] = (ours, theirs)
    assert not wrong, f"(ctypes, C) offsets differ: {wrong}"


def test_stype_values_and_names_match_the_header(header_facts):
    names = _stype_names()
    with_stype = [s for s in ALL_STRUCTS if s.STYPE is not None]
    assert len(with_stype) == len(names), "every struct with an STYPE names its VK_STRUCTURE_TYPE_ constant"
    for struct in with_stype:
        const = names[struct.__name__]
        assert struct.STYPE == header_facts[f"stype {struct.__name__}"], struct.__name__
        assert const.removeprefix("VK_STRUCTURE_TYPE_").replace("_", "").lower() == struct.__name__[2:].lower()
        assert struct().sType == struct.STYPE


def test_structs_starting_with_stype_declare_one():
    for struct in ALL_STRUCTS:
        if struct._fields_[0][0] == "sType":
            assert struct.STYPE is not None, struct.__name__


def test_enum_constants_match_the_header(header_facts):
    constants = _enum_constants()
    assert len(constants) > 60
    wrong = {k: (v, header_facts[f"enum {k}"]) for k, v in constants.items() if v != header_facts[f"enum {k}"]}
    assert not wrong, f"(ours, C) values differ: {wrong}"


def test_every_prototype_compiles_against_the_header(header_facts):
    # The fixture's program has a _Static_assert per prototype; reaching here means all held.
    assert len(_ffi.SIGNATURES) == len(_ffi.PROTOTYPES) + len(_ffi.EXTENSION_PROTOTYPES)


def test_ctypes_signatures_follow_the_prototypes():
    for proto in _ffi.PROTOTYPES + _ffi.EXTENSION_PROTOTYPES:
        restype, name, params = _ffi.parse_prototype(proto)
        res, args = _ffi.SIGNATURES[name]
        assert len(args) == len(params), name
        for (ctype, stars, _), arg in zip(params, args):
            if stars or ctype in _ffi.HANDLES:
                assert arg is ctypes.c_void_p, (name, ctype)
            else:
                assert ctypes.sizeof(arg) in (4, 8), (name, ctype)
        assert (res is None) == (restype == "void"), name


def test_the_loader_exports_every_core_prototype():
    lib = _ffi.library()
    for proto in _ffi.PROTOTYPES:
        _, name, _ = _ffi.parse_prototype(proto)
        assert getattr(lib, name, None) is not None, name


def test_every_vkresult_of_the_header_has_its_name():
    if not HEADER.exists():
        pytest.fail(f"{HEADER} is missing; run the suite through scripts/test")
    body = re.search(r"typedef enum VkResult \{(.*?)\} VkResult;", HEADER.read_text(), re.S).group(1)
    values = {name: int(value) for name, value in re.findall(r"(VK_\w+) = (-?\d+),", body)}
    assert len(values) > 40
    for name, value in values.items():
        assert results.result_name(value) == name or results.RESULT_NAMES[value] != name and name.endswith(
            ("_KHR", "_EXT")), (name, value)
    assert set(results.RESULT_NAMES.values()) <= set(values), "a name we print is not in the header"
    assert set(values.values()) == set(results.RESULT_NAMES), "values differ from the header's"
