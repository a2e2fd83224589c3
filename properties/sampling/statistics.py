"""Goodness of fit of sampled token counts to a row's exact distribution.

The test (`goodness_of_fit`) of N draws:
- a token of probability 0 observed at all fails at once (p = 0, "outside the support");
- the tokens of positive probability are put in bins: a token whose expected count is at least
  `MIN_EXPECTED` (10) is a bin of its own; the others, in decreasing order of probability (ties to the
  lowest id), are grouped greedily until each group expects at least `MIN_EXPECTED`. What is left
  over, a last group that expects less (the rare tokens), joins the bin formed before it;
- G: the likelihood-ratio G = 2 sum O ln(O / E) over the bins with Williams' correction (G / q,
  q = 1 + (k + 1) / (6 N) for k bins), referred to the chi-square distribution with k - 1 degrees of
  freedom (`chi2_sf`, through `torch.special.gammaincc`);
- rare: the rare tokens drawn too often, P(Poisson(E) >= O) for their O draws where E are expected
  (`poisson_sf`; it bounds the binomial tail from one above the mean). Merged into a bin they are
  invisible to G, however wrong: a row whose best token holds all but 1e-9 of the mass is one bin, and
  a sampler that gives the others a fifth of its draws must still fail. Too few rare draws cannot be
  significant (E < 10 gives P(O = 0) > 4e-5), so the test is one-sided;
- p = min(1, p_G / 0.9, p_rare / 0.1) where there are rare tokens (a weighted Bonferroni: a tenth of
  alpha for the rare tokens, whose errors are gross or invisible anyway), else p_G.

G rather than Pearson's X^2: the test is read far in its tail (`row_alpha` is about 1e-8), where X^2
over bins of small expected count is much heavier-tailed than the chi-square distribution (one rare
bin seen a few times too often dominates it), while G's tail decays as the chi-square's does.

The false-alarm rate: a test run checks `rows` rows and should raise a false alarm in at most
`FAMILY_RATE` (1e-6) of runs, so by Bonferroni each row is tested at alpha_row = 1e-6 / rows
(`row_alpha`). The rate holds as far as the chi-square approximation of G does;
`properties.sampling.false_alarms` measures it on correct samplers (`docs/samplers.md`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

MIN_EXPECTED = 10.0  # the smallest expected count of a bin
FAMILY_RATE = 1e-6  # false alarms per test run, all its rows together
RARE_WEIGHT = 0.1  # the share of a row's alpha spent on its rare tokens


def row_alpha(rows: int, family_rate: float = FAMILY_RATE) -> float:
    """The significance level of one row's test: alpha_row = family_rate / rows (Bonferroni), so a
    run of `rows` tests on a correct sampler fails with probability at most `family_rate`."""
    if rows < 1:
        raise ValueError(f"rows {rows} must be >= 1")
    return family_rate / rows


def chi2_sf(x: float, dof: int) -> float:
    """P(X >= x) for X chi-square with `dof` degrees of freedom (the regularized upper incomplete
    gamma Q(dof / 2, x / 2)); 1 for x <= 0 or no degree of freedom."""
    if dof < 1 or x <= 0.0:
        return 1.0
    a = torch.tensor(dof / 2, dtype=torch.float64)
    return float(torch.special.gammaincc(a, torch.tensor(x / 2, dtype=torch.float64)))


def poisson_sf(k: int, mean: float) -> float:
    """P(X >= k) for X Poisson with `mean` (the regularized lower incomplete gamma P(k, mean))."""
    if k <= 0:
        return 1.0
    if mean <= 0.0:
        return 0.0
    return float(torch.special.gammainc(torch.tensor(float(k), dtype=torch.float64), torch.tensor(mean).double()))


def token_counts(tokens: torch.Tensor, vocab: int) -> torch.Tensor:
    """Float64 [vocab]: how often each token id occurs in `tokens` (on the CPU). A ValueError names
    an id outside the vocabulary."""
    t = tokens.detach().to("cpu", torch.int64).flatten()
    bad = t[(t < 0) | (t >= vocab)]
    if bad.numel():
        raise ValueError(f"sampled ids {bad.unique()[:8].tolist()} outside the vocabulary of {vocab}")
    return torch.bincount(t, minlength=vocab).to(torch.float64)


def merge_bins(expected: torch.Tensor, min_expected: float = MIN_EXPECTED) -> tuple[list[list[int]], list[int]]:
    """The bins of the test (module docstring) as lists of token ids, each expecting at least
    `min_expected`, and the rare tokens left over (expecting less together; not yet in a bin), for
    expected counts [V]. Tokens of expected count 0 are in neither."""
    order = torch.sort(expected, descending=True, stable=True).indices.tolist()
    values = expected.tolist()
    bins: list[list[int]] = []
    group: list[int] = []
    total = 0.0
    for i in order:
        e = values[i]
        if e <= 0.0:
            break
        if e >= min_expected:
            bins.append([i])
            continue
        group.append(i)
        total += e
        if total >= min_expected:
            bins.append(group)
            group, total = [], 0.0
    return bins, group


@dataclass(slots=True, frozen=True)
class Bins:
    """The bins of one test for n draws: each token's bin (-1 for a token of probability 0; the rare
    tokens are in the last bin), each bin's expected count, and the rare tokens' mask and expected
    count. Computed once per row and distribution when one row is tested many times."""

    index: torch.Tensor  # int64 [V]
    expected: torch.Tensor  # float64 [k]
    rare: torch.Tensor  # bool [V]
    rare_expected: float
    draws: int


def bins_for(probs: torch.Tensor, n: int, min_expected: float = MIN_EXPECTED) -> Bins:
    """The `Bins` of probabilities `probs` [V] for `n` draws."""
    probs = probs.detach().to("cpu", torch.float64)
    expected = probs * n
    groups, rare = merge_bins(expected, min_expected)
    if groups:
        groups[-1] = groups[-1] + rare
    elif rare:
        groups = [rare]
    index = torch.full((probs.shape[0],), -1, dtype=torch.int64)
    for b, ids in enumerate(groups):
        index[ids] = b
    kept = index >= 0
    want = torch.zeros(len(groups), dtype=torch.float64).index_add_(0, index[kept], expected[kept])
    mask = torch.zeros(probs.shape[0], dtype=torch.bool)
    mask[rare] = True
    return Bins(index, want, mask, float(expected[mask].sum()), n)


@dataclass(slots=True, frozen=True)
class WorstToken:
    """The token furthest from its expectation: the largest |standardized residual|
    (observed - expected) / sqrt(expected); inf for a token outside the support."""

    token: int
    observed: int
    expected: float
    residual: float


@dataclass(slots=True, frozen=True)
class RareTokens:
    """The rare tokens' part of a test: how many there are, their draws, their expected draws, and
    P(Poisson(expected) >= observed)."""

    tokens: int
    observed: int
    expected: float
    p_value: float


@dataclass(slots=True, frozen=True)
class GofResult:
    """One goodness-of-fit test: the Williams-corrected G statistic on `dof` degrees of freedom and its
    p-value `p_g`, the rare tokens' part, the combined `p_value`, the worst token, the draws, the bins,
    and the tokens observed outside the support (then p = 0 and no statistic: nan)."""

    statistic: float
    dof: int
    p_g: float
    rare: RareTokens | None
    p_value: float
    worst: WorstToken
    draws: int
    bins: int
    outside: tuple[int, ...] = ()

    def passed(self, alpha: float) -> bool:
        return self.p_value >= alpha

    def describe(self) -> str:
        """One paragraph for a report."""
        w = self.worst
        if self.outside:
            shown = ", ".join(map(str, self.outside[:8])) + (" ..." if len(self.outside) > 8 else "")
            return (
                f"tokens outside the support (probability 0) were sampled: {shown}; token {w.token} "
                f"{w.observed} times in {self.draws} draws: p = 0"
            )
        parts = [f"p = {self.p_value:.3g} from {self.draws} draws in {self.bins} bin(s)"]
        if self.bins >= 2:
            parts.append(
                f"G = {self.statistic:.4g} (Williams-corrected) on {self.dof} degrees of freedom: p {self.p_g:.3g}"
            )
        r = self.rare
        if r is not None:
            parts.append(
                f"{r.tokens} rare token(s) drawn {r.observed} times, {r.expected:.3g} expected: p {r.p_value:.3g}"
            )
        if self.bins < 2 and r is None:
            parts.append("nothing to test beyond the support")
        parts.append(
            f"worst token {w.token}: observed {w.observed}, expected {w.expected:.3g} (residual {w.residual:+.2f} sd)"
        )
        return "; ".join(parts)


def worst_token(counts: torch.Tensor, expected: torch.Tensor) -> WorstToken:
    """Of the tokens expected or observed, the one with the largest |(observed - expected) /
    sqrt(expected)| (an observed token of expected count 0 first: its residual is inf); ties to the
    lowest id."""
    residual = torch.where(
        expected > 0,
        (counts - expected) / expected.clamp_min(1e-300).sqrt(),
        torch.where(counts > 0, math.inf, 0.0),
    )
    score = torch.where((expected > 0) | (counts > 0), residual.abs(), -1.0)
    i = int(torch.argmax(score))
    return WorstToken(i, int(counts[i]), float(expected[i]), float(residual[i]))


def g_test(counts: torch.Tensor, bins: Bins) -> tuple[float, int, float]:
    """(Williams-corrected G, degrees of freedom, p) of `counts` [V] over `bins`; (0, 0, 1) for one bin."""
    k = bins.expected.shape[0]
    if k < 2:
        return 0.0, 0, 1.0
    kept = bins.index >= 0
    observed = torch.zeros(k, dtype=torch.float64).index_add_(0, bins.index[kept], counts[kept])
    g = 2.0 * float(torch.where(observed > 0, observed * torch.log(observed / bins.expected), 0.0).sum())
    statistic = max(g, 0.0) / (1.0 + (k + 1) / (6.0 * bins.draws))
    return statistic, k - 1, chi2_sf(statistic, k - 1)


def goodness_of_fit(counts: torch.Tensor, probs: torch.Tensor, bins: Bins | None = None) -> GofResult:
    """The test of the module docstring for token `counts` [V] (`token_counts`) against exact
    probabilities `probs` [V] (float64, summing to 1); `bins` (`bins_for(probs, counts.sum())`) when
    computed already."""
    counts = counts.detach().to("cpu", torch.float64)
    probs = probs.detach().to("cpu", torch.float64)
    if counts.shape != probs.shape:
        raise ValueError(f"counts {tuple(counts.shape)} and probabilities {tuple(probs.shape)} differ in shape")
    n = int(counts.sum())
    worst = worst_token(counts, probs * n)
    outside = tuple(torch.nonzero((probs <= 0) & (counts > 0)).flatten().tolist())
    if outside:
        return GofResult(math.nan, 0, 0.0, None, 0.0, worst, n, 0, outside)
    if bins is None:
        bins = bins_for(probs, n)
    elif bins.draws != n:
        raise ValueError(f"bins for {bins.draws} draws, counts of {n}")
    statistic, dof, p_g = g_test(counts, bins)
    tokens = int(bins.rare.sum())
    if tokens == 0:
        return GofResult(statistic, dof, p_g, None, p_g, worst, n, bins.expected.shape[0])
    seen = int(counts[bins.rare].sum())
    rare = RareTokens(tokens, seen, bins.rare_expected, poisson_sf(seen, bins.rare_expected))
    p = min(1.0, p_g / (1.0 - RARE_WEIGHT), rare.p_value / RARE_WEIGHT)
    return GofResult(statistic, dof, p_g, rare, p, worst, n, bins.expected.shape[0])
