"""A request as a client sends it, and the `ActiveSeq` the scheduler runs it as."""

from __future__ import annotations

from dataclasses import dataclass, field

from reference.grammar import GrammarSpec, start_grammar
from reference.sampling_params import SamplingParams
from reference.state import ActiveSeq, SequenceState
from reference.vocab import EOS_ID


@dataclass(slots=True, frozen=True)
class Request:
    """What a client asks for: the prompt (at least one token), how many tokens it may get
    (`max_tokens` >= 1), its sampling parameters, penalties, grammar, EOS hold, stop ids, tool-call
    end token, top-logprobs count and its own sampling seed. `ssm` False: the request runs without
    an SSM slot (the recurrent layer restarts from zeros at every position)."""

    prompt: tuple[int, ...]
    max_tokens: int
    sampling: SamplingParams = field(default_factory=SamplingParams)
    grammar: GrammarSpec | None = None
    min_tokens: int = 0
    eos_ids: tuple[int, ...] = (EOS_ID,)
    stop_ids: tuple[int, ...] = ()
    tool_call_end_token: int | None = None
    reasoning_end_token: int | None = None
    top_logprobs: int | None = None
    seed: int = 0
    ssm: bool = True

    def positions(self) -> int:
        """How many cache positions the request can ever occupy: its prompt, then one per output
        token (a verify may decode up to the position of the last token it may emit)."""
        return len(self.prompt) + self.max_tokens

    def check(self, vocab_size: int, max_seq_len: int) -> None:
        """Raise ValueError unless the prompt is non-empty and in the vocabulary, max_tokens >= 1,
        and every position the request can occupy fits in `max_seq_len`."""
        if not self.prompt:
            raise ValueError("request: empty prompt")
        bad = [t for t in self.prompt if not 0 <= t < vocab_size]
        if bad:
            raise ValueError(f"request: prompt tokens {bad} outside the vocabulary of {vocab_size}")
        if self.max_tokens < 1:
            raise ValueError(f"request: max_tokens {self.max_tokens} must be >= 1")
        if self.positions() > max_seq_len:
            raise ValueError(
                f"request: {len(self.prompt)} prompt tokens + {self.max_tokens} max tokens exceed "
                f"max_seq_len {max_seq_len}"
            )


def active_seq_for(req: Request, seq_id: int, seq: SequenceState, vocab_size: int) -> ActiveSeq:
    """The scheduler's view of `req` admitted as `seq_id` on `seq`: last token = the last prompt
    token (not yet decoded), no output, no drafts, a fresh grammar state, speculation on."""
    return ActiveSeq(
        seq_id=seq_id,
        seq=seq,
        last_token=req.prompt[-1],
        sampling_seed=req.seed,
        max_tokens=req.max_tokens,
        eos_ids=req.eos_ids,
        **req.sampling.fields(),
        grammar_state=None if req.grammar is None else start_grammar(req.grammar, vocab_size),
        top_logprobs=req.top_logprobs,
        stop_ids=req.stop_ids,
        min_tokens=req.min_tokens,
        tool_call_end_token=req.tool_call_end_token,
        reasoning_end_token=req.reasoning_end_token,
    )
