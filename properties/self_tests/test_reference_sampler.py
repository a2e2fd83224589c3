"""The sampling oracles on the reference's own sampler: their false-alarm control.

The reference's noise is a pure function of (seed, position, token id), so over seeds its tokens are
a sample of each row's exact distribution, independent across seeds and positions and the same for
the same request wherever it sits. The oracles that judge an implementation's declared sampler
(`properties.sampling.test_distribution`, `test_seed_invariance`) must raise no alarm on it: a
failure here is the suite's own (a miscalibrated test, a wrong distribution), not an implementation's.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from properties.config import RunConfig
from properties.sampling.draws import reference_row_sampler
from properties.sampling.test_distribution import check_sampler, examples
from properties.sampling.test_seed_invariance import check_batch_invariance

pytestmark = pytest.mark.self_test


@settings(max_examples=examples())
@given(data=st.data())
def test_the_reference_sampler_passes_the_draw_oracles(run: RunConfig, data: st.DataObject) -> None:
    impl = dataclasses.replace(run.impl, name="reference sampler", sampler=reference_row_sampler)
    check_sampler(impl, run, data)


@given(data=st.data())
def test_the_reference_sampler_is_seed_invariant(run: RunConfig, data: st.DataObject) -> None:
    check_batch_invariance(reference_row_sampler, run, data)
