"""Measure how far the fast numerics of the batched operations drift from the per-sequence ones:
for random worlds, the decode logits of `decode_batch` against one `decode` per sequence, and the
drafts and confidences of one group propose against per-sequence proposes from the same hidden
rows. Prints a table and writes JSON: rows whose logits differ bitwise, the largest difference,
argmax decisions that differ and the reference margin at each.

    python scripts/fast_drift.py --device cuda --dtype bfloat16 --worlds 200 --out drift.json
"""

from __future__ import annotations

import argparse
import json

import torch

from properties.specs import ModelSpec, SeqSpec, StepSpec, WorldSpec
from properties.world import build_world
from reference.decisions import top2_margin


def world_spec(i: int, n: int, dtype: str, device: str, vocab: int, hidden: int) -> WorldSpec:
    g = torch.Generator().manual_seed(i)
    lens = torch.randint(1, 120, (n,), generator=g).tolist()
    ssm = torch.randperm(n, generator=g).tolist()
    seqs = tuple(SeqSpec(cache_len=c, slot_idx=j, ssm_slot=ssm[j], token_seed=1000 * i + j) for j, c in enumerate(lens))
    model = ModelSpec(
        dtype=dtype,
        numerics="fast",
        device=device,
        vocab_size=vocab,
        hidden=hidden,
        max_seq_len=128,
        num_slots=max(8, n),
        stash_capacity=max(64, n),
        meta_stride=64,
        weights_seed=i % 4,
    )
    return WorldSpec(model=model, seqs=seqs, bootstrap=tuple(range(n)), step=StepSpec(ladder_nd=3), cache_seed=i)


def measure(spec: WorldSpec) -> dict[str, float | int | list[float]]:
    w = build_world(spec)
    rows = sorted(w.active, key=lambda a: a.seq.ssm_slot)
    batch, single = w.clone(), w.clone()
    b_rows = sorted(batch.active, key=lambda a: a.seq.ssm_slot)
    s_rows = sorted(single.active, key=lambda a: a.seq.ssm_slot)
    logits_b = batch.model.decode_batch([a.last_token for a in b_rows], [a.seq for a in b_rows]).float()
    logits_s = torch.stack([single.model.decode(a.last_token, a.seq) for a in s_rows]).float()
    differ = (logits_b != logits_s).any(dim=1)
    flips, flip_margins = 0, []
    toks_b, toks_s = logits_b.argmax(dim=1).tolist(), logits_s.argmax(dim=1).tolist()
    for j, (tb, ts) in enumerate(zip(toks_b, toks_s, strict=True)):
        if tb != ts:
            flips += 1
            flip_margins.append(top2_margin(logits_s[j])[2])
    # Drafts from each side's own hidden rows, fed the per-sequence token so the inputs agree.
    batch.model.stash_verify_hidden_rows(list(range(len(rows))))
    conf_b: list[list[float]] = []
    drafts_b = batch.model.run_mtp_propose_batched(
        toks_s, [a.seq.seq_len for a in b_rows], list(range(len(rows))), 3, [a.seq for a in b_rows], 0, conf_b
    )
    draft_flips, conf_diff = 0, 0.0
    for j in range(len(s_rows)):
        clone = w.clone()
        c_rows = sorted(clone.active, key=lambda x: x.seq.ssm_slot)
        clone.model.decode(c_rows[j].last_token, c_rows[j].seq)
        clone.model.save_hidden_for_mtp(c_rows[j].seq)
        conf_s: list[float] = []
        d = clone.model.run_mtp_propose_multi(toks_s[j], c_rows[j].seq.seq_len, 3, c_rows[j].seq, 0, None, conf_s)
        if drafts_b is not None and d != drafts_b[j]:
            draft_flips += 1
        if drafts_b is not None and d == drafts_b[j]:
            conf_diff = max(conf_diff, max(abs(x - y) for x, y in zip(conf_s, conf_b[j], strict=True)))
    return {
        "rows": len(rows),
        "rows_logits_differ": int(differ.sum()),
        "max_abs_logit_diff": float((logits_b - logits_s).abs().max()),
        "argmax_flips": flips,
        "flip_margins": flip_margins,
        "draft_runs_differ": draft_flips,
        "max_conf_diff": conf_diff,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda")
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--worlds", type=int, default=100)
    p.add_argument("--n", type=int, default=16)
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--out", default=None)
    a = p.parse_args()
    results = [measure(world_spec(i, a.n, a.dtype, a.device, a.vocab, a.hidden)) for i in range(a.worlds)]
    total = {
        "worlds": a.worlds,
        "rows": sum(r["rows"] for r in results),
        "rows_logits_differ": sum(r["rows_logits_differ"] for r in results),
        "max_abs_logit_diff": max(r["max_abs_logit_diff"] for r in results),
        "argmax_flips": sum(r["argmax_flips"] for r in results),
        "flip_margins": sorted(m for r in results for m in r["flip_margins"]),
        "draft_runs_differ": sum(r["draft_runs_differ"] for r in results),
        "max_conf_diff": max(r["max_conf_diff"] for r in results),
        "config": vars(a),
    }
    print(json.dumps(total, indent=1))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(total, f, indent=1)


if __name__ == "__main__":
    main()
