"""`flat_tables`, the packing of block tables into one static-pass section, against the plain
definition: each table through `padded_table`, laid end to end."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reference.model.paged_kv import flat_tables, padded_table


@given(
    tables=st.lists(st.lists(st.integers(0, 10**6), max_size=12), min_size=1, max_size=8),
    width=st.integers(0, 10),
)
def test_flat_tables_is_each_padded_table_end_to_end(tables: list[list[int]], width: int) -> None:
    want = [b for t in tables for b in padded_table(t, width)]
    assert flat_tables(tables, width) == want
    assert flat_tables([tuple(t) for t in tables], width) == want
