"""The exponential race of `batched.vector.own_noise` with one realistic error at a time, for the
wrong steps of this package: each module builds the fully batched step on one of these draws and
declares the correct row sampler (`vector-torch`'s), so that only the step's own draws are wrong.

- `best_kept`: no noise at all: every sampled row gets its best kept token (a sampled path that
  fell back to greedy);
- `unit_temperature`: the kept set cut at the request's temperature, the race run on the untempered
  scores (temperature applied to the cut only);
- `no_position`: each request's generator seeded from its seed alone (every position draws the same
  noise);
- `low_seed_bits`: seeded from the seed's low 32 bits (a 32-bit seed field);
- `rows_rotated`: each sampled row's token is the next sampled row's (results gathered one row off);
- `batch_noise`: one generator for the whole pass, as for an unseeded batch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from batched.vector.own_noise import generator_seed, kept_scores, one_generator_noise, per_request_noise
from batched.vector.sampling_pass import SampleRequest, is_sampled

Seeding = Callable[[int, int], int]  # (seed, position) -> generator seed
_TINY = torch.finfo(torch.float64).tiny


def seeded_noise(seeding: Seeding) -> Callable[[Sequence[SampleRequest], int, torch.device], torch.Tensor]:
    """Gumbel noise [m, V], row i from a generator seeded with `seeding(seed, position)` of request i."""

    def noise(requests: Sequence[SampleRequest], vocab: int, device: torch.device) -> torch.Tensor:
        out = torch.zeros(len(requests), vocab, dtype=torch.float64, device=device)
        for i, r in enumerate(requests):
            if is_sampled(r):
                g = torch.Generator(device=device)
                g.manual_seed(seeding(r.seed, r.position))
                e = torch.empty(vocab, dtype=torch.float64, device=device).exponential_(generator=g)
                out[i] = -torch.log(e.clamp_(min=_TINY))
        return out

    return noise


@dataclass(slots=True, frozen=True)
class Race:
    """An `OwnDraw`: the race over the cut rows with `noise`, its scores untempered with
    `unit_temperature`, no noise at all with `noise` None, its tokens rotated among the sampled
    rows with `rotate`."""

    noise: Callable[[Sequence[SampleRequest], int, torch.device], torch.Tensor] | None
    unit_temperature: bool = False
    rotate: bool = False

    def __call__(self, proc: torch.Tensor, requests: Sequence[SampleRequest]) -> torch.Tensor:
        dev, vocab = proc.device, proc.shape[1]
        on = [is_sampled(r) for r in requests]
        kept = kept_scores(proc, requests)
        if self.unit_temperature:
            kept = torch.where(torch.isfinite(kept), proc - proc.amax(-1, keepdim=True), kept)
        scores = kept if self.noise is None else kept + self.noise(requests, vocab, dev)
        tokens = torch.argmax(scores, dim=-1)
        if self.rotate:
            rows = [i for i, s in enumerate(on) if s]
            if len(rows) > 1:
                tokens[rows] = tokens[rows[1:] + rows[:1]].clone()
        return tokens


best_kept = Race(None)
unit_temperature = Race(per_request_noise, unit_temperature=True)
no_position = Race(seeded_noise(lambda seed, position: generator_seed(seed, 0)))
low_seed_bits = Race(seeded_noise(lambda seed, position: generator_seed(seed & 0xFFFFFFFF, position)))
rows_rotated = Race(per_request_noise, rotate=True)
batch_noise = Race(one_generator_noise)
