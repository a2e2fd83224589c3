"""One command-line edge: every command that takes the suite's options takes them from one table
(`properties.config.OPTION_TABLE`), with its flags, choices and help, a command's own default the only
difference; the help lists every registered implementation; a bad value exits 2 naming the option; and
`RunConfig.from_args` reads the environment where an option is not given."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import benchmarks.profile as profile
import jobs.cli as jobs_cli
import mutants.run as mutants_run
import mutants.wrong_steps.table as wrong_steps
import nightly.cli as nightly_cli
import properties.failures.replay as failures_replay
import properties.generations.replay as generations_replay
import properties.run.plugin as plugin
import properties.run.verify as verify
import properties.sampling.draw_rates as draw_rates
from properties.config import OPTION, OPTION_TABLE, OPTIONS, RunConfig
from properties.impl import REGISTRY
from reference.model.modes import DType, NumericsMode


class Caught(Exception):
    """Raised in place of parsing: it carries the parser a command built."""


def built_by(main: Callable[[], Any], monkeypatch: pytest.MonkeyPatch) -> argparse.ArgumentParser:
    """The parser `main` builds, caught where it would parse (`parse_args` goes through `parse_known_args`)."""

    def stop(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> Any:
        raise Caught(self)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", stop)
    with pytest.raises(Caught) as caught:
        main()
    return caught.value.args[0]


def job_parser(name: str) -> Callable[[pytest.MonkeyPatch], argparse.ArgumentParser]:
    def get(monkeypatch: pytest.MonkeyPatch) -> argparse.ArgumentParser:
        sub = next(a for a in jobs_cli.parser()._actions if isinstance(a, argparse._SubParsersAction))
        return sub.choices[name]

    return get


ALL = set(OPTIONS)
JOB = {"device", "numerics", "dtype", "impl", "max_n", "reference_device"}
# command: (its parser, the suite's options it takes, the options whose values it narrows)
COMMANDS: dict[str, tuple[Callable[[pytest.MonkeyPatch], argparse.ArgumentParser], set[str], dict[str, tuple]]] = {
    "properties.run.verify": (lambda mp: built_by(lambda: verify.main([]), mp), ALL, {}),
    "nightly": (lambda mp: nightly_cli.parser(), ALL - {"replays", "threads"}, {"device": ("best", "cuda", "cpu")}),
    "mutants.run": (lambda mp: built_by(lambda: mutants_run.parse_args([]), mp), JOB, {"device": ("cpu", "cuda")}),
    "mutants.wrong_steps.table": (lambda mp: built_by(lambda: wrong_steps.main([]), mp), {"numerics", "dtype"}, {}),
    "benchmarks.profile": (lambda mp: profile.parser(), JOB, {}),
    "properties.failures.replay": (lambda mp: built_by(lambda: failures_replay.main([]), mp), {"impl", "device"}, {}),
    "properties.generations.replay": (lambda mp: built_by(lambda: generations_replay.main([]), mp), {"impl"}, {}),
    "properties.sampling.draw_rates": (
        lambda mp: built_by(lambda: draw_rates.main([]), mp),
        {"impl", "numerics", "dtype", "device"},
        {},
    ),
    "jobs check": (job_parser("check"), JOB, {}),
    "jobs mutants": (job_parser("mutants"), JOB, {}),
    "jobs bench": (job_parser("bench"), {"device", "max_n", "numerics", "reference_device"}, {}),
    "jobs profile": (job_parser("profile"), {"device", "impl"}, {}),
    "jobs nightly": (job_parser("nightly"), JOB | {"model"}, {}),
}
REPEATABLE = "; repeatable"  # draw_rates measures several implementations: its --impl is the table's, repeated


def suite_actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    flags = {o.flag: o.name for o in OPTION_TABLE}
    return {flags[s]: a for a in parser._actions for s in a.option_strings if s in flags}


def default_of(help_: str, env: str) -> tuple[str, bool]:
    """The default's words at the end of a help text, and whether it names the variable `env`."""
    _, sep, tail = help_.rpartition(" (default: ")
    assert sep and tail.endswith(")"), help_
    named = tail.endswith(f"; or {env})")
    return tail[: -len(f"; or {env})")] if named else tail[:-1], named


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_takes_the_suites_options_from_the_one_table(
    command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    get, expected, narrowed = COMMANDS[command]
    actions = suite_actions(get(monkeypatch))
    assert set(actions) == expected, f"{command} takes {sorted(actions)}"
    for name, action in actions.items():
        opt, help_ = OPTION[name], str(action.help).removesuffix(REPEATABLE)
        if name in narrowed:
            assert tuple(action.choices or ()) == narrowed[name], (command, name)
        else:
            assert (tuple(action.choices) if action.choices else None) == opt.choices, (command, name)
        words, env = default_of(help_, opt.env)
        assert help_ == opt.help(words, env, narrowed.get(name)), f"{command} {opt.flag}: {help_!r}"
        assert action.dest == name or (command.endswith("draw_rates") and name == "impl")
    if command.startswith("properties.run.verify") or command.endswith("replay"):
        impl = actions["impl"].help
        assert impl is not None and impl.endswith(f"; or {OPTION['impl'].env})"), "it reads MTP_VERIFY_IMPL"


def test_the_pytest_plugin_registers_the_same_table() -> None:
    class Recorder:
        def __init__(self) -> None:
            self.options: dict[str, dict[str, Any]] = {}

        def getgroup(self, *args: Any) -> Recorder:
            return self

        def addoption(self, flag: str, **kw: Any) -> None:
            self.options[flag] = kw

    parser = Recorder()
    plugin.pytest_addoption(parser)  # type: ignore[arg-type]
    for opt in OPTION_TABLE:
        kw = parser.options[opt.flag]
        assert kw == {"dest": f"mtp_{opt.name}", **opt.arguments()}, opt.flag
        assert kw["default"] is None and kw["help"] == opt.help() and opt.env in kw["help"]
    assert {"--example-db", "--example-db-dir"} <= set(parser.options)


@pytest.mark.parametrize("command", sorted(c for c in COMMANDS if "impl" in COMMANDS[c][1]))
def test_every_impl_help_lists_every_registered_implementation(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    get, _, _ = COMMANDS[command]
    help_ = str(suite_actions(get(monkeypatch))["impl"].help)
    assert all(name in help_ for name in REGISTRY), f"{command} --impl: {help_}"


@pytest.mark.parametrize(
    ("main", "argv", "says"),
    [
        (verify.main, ["--numerics", "slow"], "argument --numerics: invalid choice: 'slow'"),
        (verify.main, ["--max-n", "many"], "argument --max-n: invalid int value: 'many'"),
        (nightly_cli.main, ["--examples", "1", "--dtype", "int8"], "argument --dtype: invalid choice: 'int8'"),
        (nightly_cli.main, ["--examples", "1", "--device", "cuda:1"], "argument --device: invalid choice: 'cuda:1'"),
        (mutants_run.main, ["--dtype", "int8"], "argument --dtype: invalid choice: 'int8'"),
        (wrong_steps.main, ["--numerics", "slow"], "argument --numerics: invalid choice: 'slow'"),
        (profile.main, ["--mode", "example", "--dtype", "int8"], "argument --dtype: invalid choice: 'int8'"),
        (draw_rates.main, ["--numerics", "slow"], "argument --numerics: invalid choice: 'slow'"),
        (draw_rates.main, ["--device", "tpu"], "--device (or MTP_VERIFY_DEVICE)='tpu'"),
        (failures_replay.main, ["x.json", "--impl", "nowhere:step"], "--impl 'nowhere:step': cannot import"),
        (generations_replay.main, ["x.json", "--impl", "nowhere:step"], "--impl 'nowhere:step': cannot import"),
        (jobs_cli.main, ["check", "--out", "x", "--numerics", "slow"], "argument --numerics: invalid choice: 'slow'"),
    ],
)
def test_a_bad_value_exits_2_naming_the_option(
    main: Callable[[list[str]], int], argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2 and says in capsys.readouterr().err


def parser_of(**kw: Any) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cmd")
    RunConfig.add_arguments(p, **kw)
    return p


def test_the_environment_applies_where_an_option_is_not_given() -> None:
    p, fast = parser_of(), {"MTP_VERIFY_NUMERICS": "fast", "MTP_VERIFY_DTYPE": "float32"}
    run = RunConfig.from_args(p.parse_args([]), fast)
    assert run.numerics is NumericsMode.FAST and run.dtypes == (DType.FLOAT32,) and not run.exact
    assert RunConfig.from_args(p.parse_args(["--numerics", "exact"]), fast).exact, "an option beats the environment"
    assert RunConfig.parse(p, [], fast)[1].numerics is NumericsMode.FAST
    own = parser_of(defaults={"numerics": "exact"})
    assert RunConfig.from_args(own.parse_args([]), fast).exact, "a command's own default is not the environment's"


def test_parse_exits_as_argparse_does_for_what_build_refuses(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        RunConfig.parse(parser_of(), ["--max-n", "0"], {})
    assert stopped.value.code == 2 and "cmd: error: --max-n (or MTP_VERIFY_MAX_N)=0" in capsys.readouterr().err
    with pytest.raises(ValueError, match="not options of the suite"):
        parser_of(only=("numerics",), defaults={"dtype": None})


def test_a_configurations_options_parse_back_to_it() -> None:
    run = RunConfig.build({"numerics": "fast", "dtype": "bfloat16", "max_n": "5", "model": "serving"}, {})
    assert RunConfig.from_args(parser_of().parse_args(run.options()), {}) == run


def test_verify_hands_every_suite_option_it_is_given_to_pytest(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[list[str]] = []
    monkeypatch.setattr(verify.pytest, "main", lambda args: ran.append(args) or 0)
    given = ["--numerics", "fast", "--model", "serving", "--threads", "2", "--replays", "r"]
    assert verify.main([*given, "--device", "cpu", "--workers", "0"]) == 0
    (args,) = ran
    for flag, value in zip(given[::2], given[1::2], strict=True):
        assert args[args.index(flag) + 1] == value, flag
    assert "--dtype" not in args, "an option not given is left to pytest (and the environment)"
    assert main_device(verify, monkeypatch) == "best"


def main_device(module: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    ran: list[list[str]] = []
    monkeypatch.setattr(module.pytest, "main", lambda args: ran.append(args) or 0)
    module.main(["--workers", "0"])
    return ran[-1][ran[-1].index("--device") + 1]


def test_a_job_without_the_suites_packages_still_takes_its_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jobs_cli, "suite_options", lambda: None)
    a = jobs_cli.parser().parse_args(["check", "--out", str(Path("x")), "--numerics", "exact", "--max-n", "3"])
    assert (a.numerics, a.max_n, a.device) == ("exact", 3, "cuda")
