"""Action bodies inlined with constant arguments (codegen._fold_constants): a local that became a
constant is replaced by its value and a bounds check on it decided; anything else is left alone."""

from __future__ import annotations

from p4kit.switch.codegen import _fold_constants


def test_a_constant_index_loses_its_local_and_its_check() -> None:
    body = [
        "    _i3 = 5",
        "    if 0 <= _i3 < 16:",
        "        C.packets[_i3] += 1",
        "        C.bytes[_i3] += P.plen",
    ]
    assert _fold_constants(body) == ["    C.packets[5] += 1", "    C.bytes[5] += P.plen"]


def test_a_check_that_fails_drops_its_block_only() -> None:
    body = ["    _i3 = 20", "    if 0 <= _i3 < 16:", "        C.packets[_i3] += 1", "    y = _i3"]
    assert _fold_constants(body) == ["    y = 20"]
    assert _fold_constants(["    _i3 = 20", "    if _i3 < 16:", "        z = 1"]) == ["    pass"]


def test_a_local_stored_twice_is_not_folded() -> None:
    for body in (
        ["    _i3 = 2", "    _i3 += 1", "    if _i3 < 8:", "        z = 1"],
        ["    _i3 = 2", "    _i3 = _h1[2]", "    if _i3 < 8:", "        z = 1"],
        ["    _i3 = 2", "    _i3, _i4 = f()", "    if _i3 < 8:", "        z = 1"],
    ):
        assert _fold_constants(body) == body
