"""The generated enums (hydroplane.spirv.enums) are the classes the enum metaclass would make.

enums.py builds its 59 classes with `enum._simple_enum` (cheaper to import); each is compared here with the class
that `enums.by_metaclass` makes from the same `NAME = value` lines, read from the generated source: members and
aliases in order, values, look-ups by value, repr / str / format, flag arithmetic and the IntFlag boundary, pickling;
and, where the standard library has it, `enum._test_simple_enum` (its own check of such classes).
"""

import ast
import enum
import pickle

import pytest
from conftest import REPO

from hydroplane.spirv import enums

SOURCE = REPO / "src/hydroplane/spirv/enums.py"


def _bodies() -> dict[str, tuple[str, list[tuple[str, int]]]]:
    """Each generated class: (its base's name, its `NAME = value` lines in order), read from the source."""
    out = {}
    for node in ast.parse(SOURCE.read_text()).body:
        if isinstance(node, ast.ClassDef):
            base = node.decorator_list[0].args[0].attr
            lines = [(stmt.targets[0].id, stmt.value.value) for stmt in node.body if isinstance(stmt, ast.Assign)]
            out[node.name] = (base, lines)
    return out


BODIES = _bodies()


def _reference(name: str) -> type[enum.Enum]:
    base, lines = BODIES[name]
    plain = type(name, (), {"__module__": enums.__name__, "__qualname__": name,
                            "__doc__": getattr(enums, name).__doc__, **dict(lines)})
    return enums.by_metaclass(getattr(enum, base))(plain)


def test_every_class_is_generated_and_exported():
    assert list(BODIES) == enums.__all__ and len(BODIES) == 59
    assert sum(len(lines) for _, lines in BODIES.values()) > 2000


@pytest.mark.parametrize("name", enums.__all__)
def test_the_class_is_what_the_metaclass_makes(name):
    made, reference = getattr(enums, name), _reference(name)
    base = getattr(enum, BODIES[name][0])
    assert type(made) is type(reference) and made.__mro__[1:] == reference.__mro__[1:] and issubclass(made, base)
    assert (made.__module__, made.__qualname__, made.__doc__) == (enums.__name__, name, reference.__doc__)
    assert made.__doc__
    assert [(m.name, m.value) for m in made] == [(m.name, m.value) for m in reference]
    assert [(k, m.name, m.value) for k, m in made.__members__.items()] == \
        [(k, m.name, m.value) for k, m in reference.__members__.items()]
    for key, value in BODIES[name][1]:
        member = getattr(made, key)
        assert type(member) is made and member is made[key] is made(value) and member == value
        assert made(value).name == reference(value).name
        assert (repr(member), str(member), format(member), f"{member:d}", hash(member)) == \
            (repr(getattr(reference, key)), str(getattr(reference, key)), format(getattr(reference, key)),
             f"{getattr(reference, key):d}", hash(getattr(reference, key)))
        assert pickle.loads(pickle.dumps(member)) is member
    if hasattr(enum, "_test_simple_enum"):
        enum._test_simple_enum(reference, made)


@pytest.mark.parametrize("name", [name for name in enums.__all__ if BODIES[name][0] == "IntFlag"])
def test_flag_arithmetic_is_the_metaclass_ones(name):
    made, reference = getattr(enums, name), _reference(name)
    values = [value for _, value in BODIES[name][1] if value]
    every = 0
    for value in values:
        every |= value
    unknown = 1 << max(every.bit_length(), 31)
    for a in values[:6]:
        for b in values[:6]:
            assert repr(made(a) | made(b)) == repr(reference(a) | reference(b))
            assert repr(made(a) & made(b)) == repr(reference(a) & reference(b))
        assert repr(~made(a)) == repr(~reference(a)) and repr(made(a) ^ made(values[-1])) == \
            repr(reference(a) ^ reference(values[-1]))
    for value in (0, every, every | unknown, unknown):
        assert repr(made(value)) == repr(reference(value)) and int(made(value)) == value
    assert made._boundary_ is reference._boundary_ is enum.KEEP


def test_an_unknown_value_is_refused_alike():
    with pytest.raises(ValueError) as made:
        enums.Scope(1234)
    with pytest.raises(ValueError) as reference:
        _reference("Scope")(1234)
    assert str(made.value) == str(reference.value)
