"""`TableMirror`: block tables by slot on the device, rewritten exactly where a table changed."""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from batched.vector.table_mirror import TableMirror

tables_of = st.lists(st.integers(0, 99), max_size=7)


def row(m: TableMirror, slot: int) -> list[int]:
    return m.rows[slot].tolist()


def test_a_written_row_holds_its_table_cut_or_zero_padded_to_the_width() -> None:
    m = TableMirror.make(4, 5, torch.device("cpu"))
    m.write([2, 0], [[7, 8], [1, 2, 3, 4, 5, 6]])
    assert row(m, 2) == [7, 8, 0, 0, 0] and row(m, 0) == [1, 2, 3, 4, 5]
    assert row(m, 1) == [0] * 5 and m.seen == [[1, 2, 3, 4, 5, 6], None, [7, 8], None]


def test_an_equal_table_is_not_written_again() -> None:
    m = TableMirror.make(2, 3, torch.device("cpu"))
    m.write([1], [[4, 5]])
    m.rows[1] = -1  # a row left alone shows as -1
    assert m.changed([1], [[4, 5]]) == []
    m.write([1], [[4, 5]])
    assert row(m, 1) == [-1, -1, -1]


def test_a_table_edited_in_place_grown_or_handed_to_another_slot_is_written_again() -> None:
    m = TableMirror.make(3, 4, torch.device("cpu"))
    t, u = [1, 2], [3]
    m.write([0, 1], [t, u])
    t[1] = 9  # edited in place: the mirror kept a copy, so it sees the edit
    u.append(6)  # grown
    assert m.changed([0, 1, 2], [t, u, [1, 2]]) == [0, 1, 2]
    m.write([0, 1, 2], [t, u, [1, 2]])
    assert [row(m, s) for s in range(3)] == [[1, 9, 0, 0], [3, 6, 0, 0], [1, 2, 0, 0]]


@given(steps=st.lists(st.lists(st.tuples(st.integers(0, 5), tables_of), max_size=6), max_size=5))
def test_after_any_writes_every_row_holds_the_last_table_written_to_its_slot(steps) -> None:
    m = TableMirror.make(6, 4, torch.device("cpu"))
    last: dict[int, list[int]] = {}
    for writes in steps:
        writes = list(dict(writes).items())  # distinct slots in one write, as the checks ensure
        m.write([s for s, _ in writes], [t for _, t in writes])
        last.update((s, t) for s, t in writes)
    for s in range(6):
        want = (last.get(s, []) + [0] * 4)[:4]
        assert row(m, s) == want, f"slot {s}"
