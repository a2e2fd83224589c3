"""Plain, printable descriptions of whole generations: the engines' model and levers, the requests,
and the script of actions (add a request, plan a fault, step, abort) that P9 runs and a replay file
holds. Running a script is `properties.generations.pair`."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from properties.worlds.grammars import SPECS as GRAMMAR_SPECS
from properties.worlds.specs import FaultSpec, ModelSpec, StepSpec, changed_fields
from reference.request import Request
from reference.sampling_params import SamplingParams
from reference.vocab import EOS_ID, REASONING_END_ID, TOOL_CALL_END_ID


@dataclass(slots=True, frozen=True)
class RequestSpec:
    """One request. `grammar` names a ready-made grammar (`properties.worlds.grammars`); `eos` False: no
    EOS ids (a grammar then finishes by terminating); `tool_call_end` / `reasoning`: the request
    has the vocabulary's tool-call-end / reasoning-end token; `stop_at`: before it is added, the
    request gets as stop id the token its own solo decode emits at that output index (so that a
    stop is reached); `eos_at`: likewise, but as one more EOS id (so that a hold masks a token the
    request wants, and, once the hold ends, the request can stop on it); `ssm` False: no SSM slot."""

    prompt: tuple[int, ...] = (5,)
    max_tokens: int = 8
    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    repetition: float = 1.0
    frequency: float = 0.0
    presence: float = 0.0
    grammar: str | None = None
    min_tokens: int = 0
    eos: bool = True
    eos_ids: tuple[int, ...] = ()  # EOS ids besides the vocabulary's own (with `eos`)
    eos_at: int | None = None
    stop_ids: tuple[int, ...] = ()
    stop_at: int | None = None
    tool_call_end: bool = False
    reasoning: bool = False
    top_logprobs: int | None = None
    seed: int = 0
    ssm: bool = True

    @property
    def sampling(self) -> SamplingParams:
        """The request's sampling parameters, as the one record (`reference.sampling_params`)."""
        return SamplingParams(self.temperature, self.top_k, self.top_p, self.repetition, self.frequency, self.presence)

    def request(self, max_seq_len: int) -> Request:
        """The reference request; max_tokens is cut so the request fits in `max_seq_len` (prompts
        longer than max_seq_len - 1 are cut too)."""
        prompt = self.prompt[: max_seq_len - 1]
        return Request(
            prompt=prompt,
            max_tokens=max(1, min(self.max_tokens, max_seq_len - len(prompt))),
            sampling=self.sampling,
            grammar=None if self.grammar is None else GRAMMAR_SPECS[self.grammar],
            min_tokens=self.min_tokens,
            eos_ids=(EOS_ID, *self.eos_ids) if self.eos else (),
            stop_ids=self.stop_ids,
            tool_call_end_token=TOOL_CALL_END_ID if self.tool_call_end else None,
            reasoning_end_token=REASONING_END_ID if self.reasoning else None,
            top_logprobs=self.top_logprobs,
            seed=self.seed,
            ssm=self.ssm,
        )


@dataclass(slots=True, frozen=True)
class GenerationSpec:
    """The world both engines start from: the model (its `num_slots` sequence slots and as many SSM
    slots), the step levers, the seed of the caches' initial garbage, and the blocks of each cache
    (None: room for every slot's longest request)."""

    model: ModelSpec = field(default_factory=ModelSpec)
    step: StepSpec = field(default_factory=StepSpec)
    cache_seed: int = 0
    num_blocks: int | None = None


@dataclass(slots=True, frozen=True)
class Action:
    """One thing a script does: `add` a request, plan a `fault` for the next step's bootstrap,
    `step` both engines once, `abort` the request `seq_id`, or `drain` (step until idle)."""

    kind: str
    request: RequestSpec | None = None
    fault: FaultSpec | None = None
    seq_id: int | None = None

    def text(self) -> str:
        if self.kind == "add" and self.request is not None:
            return f"add {changed_fields(self.request) or 'defaults'}"
        if self.kind == "fault" and self.fault is not None:
            f = self.fault
            return f"fault {f.op} call {f.call} -> {f.kind}" + (f" (row {f.row})" if f.row is not None else "")
        if self.kind == "abort":
            return f"abort request {self.seq_id}"
        return self.kind


@dataclass(slots=True)
class Script:
    """A whole P9 example: the world and the actions, in order."""

    spec: GenerationSpec
    actions: list[Action] = field(default_factory=list)
    note: str = ""

    def to_json(self, indent: int | None = None) -> str:
        d: dict[str, Any] = {"spec": asdict(self.spec), "actions": [_action_dict(a) for a in self.actions]}
        if self.note:
            d["note"] = self.note
        return json.dumps(d, sort_keys=True, indent=indent, separators=None if indent else (",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Script:
        d = json.loads(text)
        s = d["spec"]
        spec = GenerationSpec(ModelSpec(**s["model"]), StepSpec(**_tuples(s["step"])), s["cache_seed"], s["num_blocks"])
        return cls(spec, [_action(a) for a in d["actions"]], d.get("note", ""))

    def summary(self) -> list[str]:
        """The script a line per action, steps counted."""
        lines, step = [], 0
        for a in self.actions:
            if a.kind == "step":
                step += 1
                lines.append(f"step {step}")
            else:
                lines.append(a.text())
        return lines


def _action_dict(a: Action) -> dict[str, Any]:
    d: dict[str, Any] = {"kind": a.kind}
    if a.request is not None:
        d["request"] = {f.name: getattr(a.request, f.name) for f in fields(a.request)}
    if a.fault is not None:
        d["fault"] = asdict(a.fault)
    if a.seq_id is not None:
        d["seq_id"] = a.seq_id
    return d


def _action(d: dict[str, Any]) -> Action:
    req = RequestSpec(**_tuples(d["request"])) if "request" in d else None
    fault = FaultSpec(**d["fault"]) if "fault" in d else None
    return Action(d["kind"], req, fault, d.get("seq_id"))


def _tuples(d: dict[str, Any]) -> dict[str, Any]:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in d.items()}
