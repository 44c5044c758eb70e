"""`mcp_tether.records`: the plain records of the machine view behave like the
dataclasses they replaced (init, defaults, equality, frozen, replace)."""

from __future__ import annotations

import pytest

from mcp_tether.records import field, record, replace


@record
class Point:
    x: int
    y: int = 0
    tags: list[str] = field(default_factory=list)

    def norm1(self) -> int:
        return abs(self.x) + abs(self.y)


@record(frozen=True)
class Key:
    host: str
    name: str


def test_fields_are_taken_by_position_or_by_name_with_defaults() -> None:
    assert Point(1, 2).y == 2
    assert Point(x=3).y == 0
    assert Point(1, tags=["a"]).tags == ["a"]
    assert Point(-1, 2).norm1() == 3  # methods stay


def test_a_default_factory_makes_a_fresh_value_for_each_instance() -> None:
    a, b = Point(1), Point(2)
    a.tags.append("x")
    assert b.tags == []


@pytest.mark.parametrize("make, message", [
    (lambda: Point(), "missing required argument: 'x'"),
    (lambda: Point(1, 2, [], 4), "takes 3 positional arguments but 4 were given"),
    (lambda: Point(1, z=2), "unexpected keyword argument 'z'"),
    (lambda: Point(1, x=2), "multiple values for argument 'x'"),
])
def test_bad_arguments_are_a_type_error_naming_the_argument(make: object, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        make()  # type: ignore[operator]


def test_repr_and_equality_follow_the_fields() -> None:
    assert repr(Point(1, 2)) == "Point(x=1, y=2, tags=[])"
    assert Point(1, 2) == Point(1, 2)
    assert Point(1, 2) != Point(1, 3)
    assert Point(1) != Key("a", "b")


def test_a_mutable_record_is_unhashable_and_a_frozen_one_is_hashable_and_fixed() -> None:
    with pytest.raises(TypeError):
        hash(Point(1))
    assert {Key("a", "b"), Key("a", "b")} == {Key("a", "b")}
    k = Key("a", "b")
    with pytest.raises(AttributeError, match="frozen"):
        k.host = "c"  # type: ignore[misc]


def test_replace_copies_with_changes_and_leaves_the_original() -> None:
    p = Point(1, 2, ["t"])
    q = replace(p, y=5)
    assert (q.x, q.y, q.tags, p.y) == (1, 5, ["t"], 2)
    assert replace(Key("a", "b"), name="c") == Key("a", "c")
