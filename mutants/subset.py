"""A bounded, deterministic subset of the catalogue for a second CI mode: for every behaviour id the
catalogue names, at least `per_id` of its mutants (all of them when it has fewer).

The choice is greedy and depends only on the catalogue: ids are taken in catalogue order of their
first mutant, and for an id that still needs mutants the one covering the most still-uncovered ids
is taken (catalogue order breaks ties)."""

from __future__ import annotations

from mutants.spec import Mutant


def named_ids(mutants: tuple[Mutant, ...] | list[Mutant]) -> list[str]:
    """Every behaviour id the mutants name, in order of first appearance."""
    return list(dict.fromkeys(i for m in mutants for i in m.ids))


def cover(mutants: tuple[Mutant, ...] | list[Mutant], per_id: int = 1) -> list[Mutant]:
    """The subset, in catalogue order: every id named by `mutants` keeps at least `per_id` of its
    mutants (or all it has)."""
    chosen: list[Mutant] = []
    count: dict[str, int] = {}
    for bid in named_ids(mutants):
        candidates = [m for m in mutants if bid in m.ids and m not in chosen]
        while count.get(bid, 0) < per_id and candidates:
            best = max(candidates, key=lambda m: (sum(count.get(i, 0) < per_id for i in m.ids), -mutants.index(m)))
            chosen.append(best)
            candidates.remove(best)
            for i in best.ids:
                count[i] = count.get(i, 0) + 1
    return [m for m in mutants if m in chosen]
