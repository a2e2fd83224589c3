"""Every behaviour id of the design is covered by at least one property (`properties.behaviours`: the
suite's own bookkeeping of its `@covers` declarations)."""

import pytest

from properties.behaviours import ALL_IDS, load_all, uncovered

pytestmark = pytest.mark.self_test


def test_every_behaviour_id_is_covered() -> None:
    missing = uncovered()
    assert not missing, f"behaviour ids no property covers: {missing}"


def test_every_property_names_only_known_ids() -> None:
    for prop, ids in load_all().items():
        assert ids and set(ids) <= set(ALL_IDS), f"{prop}: {ids}"
