"""The suite's command-line options (suite/plugin/options.py) in pytest's own process: what
pytest_addoption registers, parsed by pytest's own parser (defaults, types, choices, repeats,
metavars), and the checks of listed and numeric values. The session's use of them (usage errors,
the reproducer) is tests/test_plugin_session.py's."""
from __future__ import annotations

import pytest
from _pytest.config.argparsing import Parser

from suite.contract import PRODUCTS
from suite.plugin import options

GROUP = "aclnn-conformance"
DEFAULTS = dict(backend=None, backend_opt=[], product=[], op=[], cases=[], golden_dir=None, tolerances=None,
                standard=None, scale="default", golden_cache=None, isolation="process", case_timeout=60.0,
                backend_restarts=8, confine="auto", timing=False, timing_rounds=10, timing_warm=False,
                max_memory=None)


def _parser() -> Parser:
    p = Parser(_ispytest=True)
    options.pytest_addoption(p)
    return p


def _parse(*args: str) -> dict:
    ns = vars(_parser().parse(list(args)))
    ns.pop("file_or_dir")
    return ns


def _refused(*args: str) -> str:
    with pytest.raises(pytest.UsageError) as e:
        _parser().parse(list(args))
    return str(e.value)


def test_no_option_given_parses_to_the_defaults_the_session_reads():
    ns = _parse()
    assert ns == DEFAULTS
    assert type(ns["case_timeout"]) is float and type(ns["backend_restarts"]) is int
    assert type(ns["timing_rounds"]) is int


def test_every_option_given_is_parsed_to_its_type_and_the_repeatable_ones_are_kept_in_order():
    ns = _parse("--backend", "pkg.mod:Be", "--backend-opt", "device=1", "--backend-opt", "a=b",
                "--product", "atlas-a2", "--product", "atlas-a3,atlas-training", "--op", "MseLoss", "--op", "KlDiv",
                "--cases", "a.yaml", "--cases", "b", "--golden-dir", "g", "--tolerances", "t.yaml",
                "--standard", "strict", "--scale", "huge", "--golden-cache", "none", "--isolation", "none",
                "--case-timeout", "2.5", "--backend-restarts", "3", "--confine", "off", "--timing",
                "--timing-rounds", "4", "--timing-warm", "--max-memory", "16G")
    assert ns == dict(backend="pkg.mod:Be", backend_opt=["device=1", "a=b"],
                      product=["atlas-a2", "atlas-a3,atlas-training"], op=["MseLoss", "KlDiv"],
                      cases=["a.yaml", "b"], golden_dir="g", tolerances="t.yaml", standard="strict", scale="huge",
                      golden_cache="none", isolation="none", case_timeout=2.5, backend_restarts=3, confine="off",
                      timing=True, timing_rounds=4, timing_warm=True, max_memory="16G")
    assert _parse("--scale", "small")["scale"] == "small" and _parse("--scale", "default")["scale"] == "default"
    assert _parse("--isolation", "process")["isolation"] == "process"
    assert _parse("--confine", "auto")["confine"] == "auto"


@pytest.mark.parametrize("args,says", [
    (("--scale", "tiny"), "argument --scale: invalid choice: 'tiny' (choose from 'small', 'default', 'huge')"),
    (("--isolation", "thread"), "argument --isolation: invalid choice: 'thread' (choose from 'process', 'none')"),
    (("--confine", "on"), "argument --confine: invalid choice: 'on' (choose from 'auto', 'landlock', 'off')"),
    (("--case-timeout", "soon"), "argument --case-timeout: invalid float value: 'soon'"),
    (("--backend-restarts", "1.5"), "argument --backend-restarts: invalid int value: '1.5'"),
    (("--timing-rounds", "many"), "argument --timing-rounds: invalid int value: 'many'"),
    (("--timing=yes",), "argument --timing: ignored explicit argument 'yes'"),
])
def test_a_value_outside_an_options_choices_or_type_is_refused_by_the_parser(args, says):
    assert says in _refused(*args)


def test_the_options_are_in_the_suites_group_with_the_placeholders_the_help_shows():
    p = _parser()
    assert [g.name for g in p._groups if g.options] == [GROUP]
    metavars = {o.names()[0]: o.attrs().get("metavar") for o in p.getgroup(GROUP).options}
    assert metavars == {"--backend": "NAME", "--backend-opt": "KEY=VALUE", "--product": "PRODUCT", "--op": "NAME",
                        "--cases": "PATH", "--golden-dir": "DIR", "--tolerances": "FILE", "--standard": "NAME",
                        "--scale": "TIER", "--golden-cache": "DIR", "--isolation": None,
                        "--case-timeout": "SECONDS", "--backend-restarts": "N", "--confine": None,
                        "--timing": None, "--timing-rounds": "N", "--timing-warm": None, "--max-memory": "SIZE"}
    assert options.SCALES == ("small", "default", "huge")


def test_listed_names_are_split_at_commas_and_stripped_and_an_unknown_one_is_one_line():
    known = ("a", "bb", "c")
    assert options.listed("--x", [], known) == []
    assert options.listed("--x", [" a , bb", "c", ",", ""], known) == ["a", "bb", "c"]
    with pytest.raises(pytest.UsageError) as e:
        options.listed("--x", ["a,zz", "yy"], known)
    assert str(e.value) == "--x: unknown zz, yy (known: a, bb, c)"
    with pytest.raises(pytest.UsageError) as e:
        options.listed("--product", ["atlas-nine"], PRODUCTS)
    assert str(e.value) == f"--product: unknown atlas-nine (known: {', '.join(PRODUCTS)})"
    with pytest.raises(pytest.UsageError) as e:              # issue 42, item 14
        options.listed("--op", ["nllloss,aclnnNLLLoss"], ("NLLLoss", "MseLoss"))
    assert str(e.value) == ("--op: unknown nllloss (did you mean NLLLoss?), aclnnNLLLoss (did you mean NLLLoss?) "
                            "(known: NLLLoss, MseLoss)")


def test_each_option_shows_its_own_help_and_a_default_it_states_is_the_parsed_one():
    """The words are data (options.HELP, no mutant is planted in them): what is checked is that
    each option shows the text kept for it, none is missing or left over, and a help that states
    a default states the one the parser gives (a changed default with stale words is caught)."""
    helps = {o.names()[0]: o.attrs()["help"] for o in _parser().getgroup(GROUP).options}
    assert helps == options.HELP
    assert all(text.strip() for text in helps.values())
    for name in ("case_timeout", "backend_restarts", "timing_rounds"):
        assert f"(default {DEFAULTS[name]:g}" in helps["--" + name.replace("_", "-")], name
    assert "(default: reference)" in helps["--backend"] and "'process' (default)" in helps["--isolation"]
    assert "'auto' (default)" in helps["--confine"] and "default cases/)" in helps["--cases"]
