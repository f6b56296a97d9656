"""The cuDNN requirement solver behind %cudnn_fix install-matching-cudnn at its edges: what each
framework's rule accepts (equal, one below, one above; each era), which wheel family a build
needs, which pins count, and the requirement text pip is given.

Sources: docs/facts.md "Which runtime cuDNN each framework accepts" (the rules, 9.10.0's break),
"Where each framework's compiled-against versions come from" (the Requires-Dist pins: torch
``nvidia-cudnn-cu12==9.10.2.21``, tensorflow ``extra == "and-cuda"``); PEP 440 / PEP 508 via
``packaging`` (what a requirement accepts).
"""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet

from cudnn_magic.fixes.solver import solve_cudnn
from cudnn_magic.model import FrameworkBuild
from cudnn_magic.rules.requirement import framework_need, render_requirement, witness


def _fw(checker, compiled, cuda="12.8", pins=(), name="X", dist="x", version="1.0", **kw):
    return FrameworkBuild(name, dist, version, cudnn_compiled=compiled, cuda_compiled=cuda, checker=checker,
                          pins=tuple(pins), **kw)


RULE_EDGES = [
    # checker, compiled, accepted versions, refused versions
    ("tensorflow", "9.3.0", ["9.3.0", "9.3.0.75", "9.4.0", "9.99"], ["9.2.99", "10.0", "8.9.7"]),
    ("xla", "9.8.0", ["9.8.0", "9.9.1"], ["9.7.1", "10.0"]),
    ("pytorch", "9.1.0", ["9.1.0", "9.2.0"], ["9.0.99", "10.0"]),
    ("pytorch", "6.0.21", ["6.0.0", "6.0.99"], ["6.1.0", "5.9.9", "7.0"]),  # below 7: same minor
    ("pytorch", "7.0.5", ["7.0.0", "7.6.5"], ["6.9", "8.0"]),  # from 7: newer minor ok
    ("tensorflow-legacy", "6.0", ["6.0.0", "6.0.9"], ["6.1.0", "5.9"]),
    ("tensorflow-legacy", "7.4", ["7.4.0", "7.6.5"], ["7.3.9", "8.0"]),
    ("tensorflow-compat-version", "7.0", ["7.0.0", "7.0.5"], ["7.1.0", "6.9"]),
    ("onnxruntime", "9.8.0", ["9.0.0", "9.99"], ["8.9.7", "10.0"]),  # ONNX Runtime: the major only
    ("tensorflow", "9", ["9.0.0", "9.99"], ["8.9.7", "10.0"]),  # major only known
    ("jax", "9.8.0", ["9.8.0", "9.10.1", "9.11.0"], ["9.7.9", "9.10.0", "9.10.0.56", "10.0"]),
    ("jax", "9.10.0", ["9.10.1"], ["9.10.0", "9.9.0"]),  # JAX refuses 9.10.0 even when built with it
    ("nvidia", "9.9.0", ["9.9.0", "9.10.1"], ["9.10.0", "9.10.0.56", "9.8.0"]),
    ("nvidia", "9.10.0", ["9.10.0", "9.10.1"], ["9.9.0"]),  # built with 9.10: 9.10.0 is fine
    ("cupy", "9.9.0", ["9.9.0", "9.10.1"], ["9.10.0"]),
    ("cupy", "8.9.0", ["8.9.0", "8.9.7"], ["8.8.1", "9.0"]),
]


@pytest.mark.parametrize("checker, compiled, accepts, refuses", RULE_EDGES,
                         ids=[f"{c}-{v}" for c, v, _, _ in RULE_EDGES])
def test_each_rule_accepts_exactly_its_range(checker, compiled, accepts, refuses):
    need = framework_need(_fw(checker, compiled))
    assert need is not None
    for v in accepts:
        assert need.specifier.contains(v), (v, need.specifier)
    for v in refuses:
        assert not need.specifier.contains(v), (v, need.specifier)
    assert need.sources and need.sources[-1].startswith(f"rule ({checker}): built with ")


@pytest.mark.parametrize("checker, compiled, text", [
    ("tensorflow", "9.3.0", "same major 9, minor >= 3"), ("pytorch", "6.0.21", "same 6.0"),
    ("onnxruntime", "9.8.0", "same major 9"), ("tensorflow", "9", "same major 9"),
    ("jax", "9.8.0", "same major 9, minor >= 8, not 9.10.0"), ("cupy", "9.10.0", "same major 9, minor >= 10"),
])
def test_the_rule_is_named_in_the_sources(checker, compiled, text):
    need = framework_need(_fw(checker, compiled))
    assert need.sources[-1].endswith(f"needs {text}")


FAMILIES = [
    # cuda compiled, cudnn compiled, pins -> wheel family
    ("12.8", "9.10.2", (), "nvidia-cudnn-cu12"),
    ("13.0", "9.24.0", (), "nvidia-cudnn-cu13"),
    ("11.8", "8.9.7", (), "nvidia-cudnn-cu11"),
    ("13.0", "8.9.7", (), "nvidia-cudnn-cu12"),  # no cuDNN 8 wheel for CUDA 13: cu12 is the newest
    ("12.2", "8.9.7", (), "nvidia-cudnn-cu12"),
    (None, "9.1.0", (), "nvidia-cudnn-cu12"),  # unknown CUDA: cuDNN 9 pairs with 12
    (None, "8.9.7", (), "nvidia-cudnn-cu11"),  # unknown CUDA: cuDNN 8 with 11
    ("", "9", (), "nvidia-cudnn-cu12"),
    ("12.8", None, ("nvidia-cudnn-cu13==9.24.0.43",), "nvidia-cudnn-cu13"),  # a pin decides
]


@pytest.mark.parametrize("cuda, compiled, pins, family", FAMILIES, ids=[f"{c}-{v}-{len(p)}" for c, v, p, _ in FAMILIES])
def test_wheel_family(cuda, compiled, pins, family):
    need = framework_need(_fw("tensorflow", compiled, cuda=cuda, pins=pins))
    assert need.package == family


PINS = [
    # pin as in Requires-Dist, counts here (Linux x86_64 test machine)
    ('nvidia-cudnn-cu12==9.10.2.21; platform_system == "Linux"', True),
    ('nvidia-cudnn-cu12==9.10.2.21; platform_system == "Windows"', False),
    ('nvidia-cudnn-cu12<10,>=9.3.0.75; extra == "and-cuda"', True),  # the extra that brings the wheel counts
    ('nvidia-cudnn-cu12==9.3.0.75; extra == "and-cuda" and platform_system == "Windows"', False),
    ("nvidia-cudnn-cu12==9.3.0.75", True),
    ("Nvidia_Cudnn_CU12==9.3.0.75", True),  # PEP 503 names
    ("nvidia-cudnn-cu12x==9.3.0.75", False), ("nvidia-cublas-cu12==12.8.4.1", False),
    ("nvidia-cudnn-cu12==9.3.0.75; python_version < '3'", False),
    ("not a requirement ===", False),
]


@pytest.mark.parametrize("pin, counts", PINS, ids=[p[:60] for p, _ in PINS])
def test_which_pins_count(pin, counts):
    need = framework_need(_fw("tensorflow", None, pins=(pin,)))
    if counts:
        assert need is not None and need.package == "nvidia-cudnn-cu12"
        assert need.sources[0].startswith("pin nvidia-cudnn-cu12") and "(x metadata)" in need.sources[0]
    else:
        assert need is None


def test_pins_and_rule_intersect():
    fw = _fw("pytorch", "9.10.2", pins=('nvidia-cudnn-cu12==9.10.2.21; platform_system == "Linux"',),
             name="PyTorch", version="2.9.1")
    need = framework_need(fw)
    assert need.framework == "PyTorch 2.9.1"
    assert need.requirement == "nvidia-cudnn-cu12==9.10.2.21"
    assert need.specifier.contains("9.10.2.21") and not need.specifier.contains("9.10.2.22")


@pytest.mark.parametrize("fw", [
    _fw("pytorch", None, name="PyTorch", version="2.9.1+cpu"),  # a CPU build: nothing known
    _fw("tensorflow", "9.3.0", pip_solvable=False),  # a vendored cuDNN: pip cannot serve it
])
def test_nothing_to_solve(fw):
    assert framework_need(fw) is None


RENDER = [
    (">=9.3.0.75,<10.0", "nvidia-cudnn-cu12>=9.3.0.75,<10"),
    ("==9.10.2.21,>=9.3,<10", "nvidia-cudnn-cu12==9.10.2.21"),
    (">=9.8,<10,!=9.10.0.*", "nvidia-cudnn-cu12>=9.8,!=9.10.0.*,<10"),
    (">=9.11,<10,!=9.10.0.*", "nvidia-cudnn-cu12>=9.11,<10"),  # an exclusion below the range is dropped
    (">=9.8,<9.10,!=9.10.0.*", "nvidia-cudnn-cu12>=9.8,<9.10"),  # and one at/above its top
    (">=9.3,>=9.8,<11,<10", "nvidia-cudnn-cu12>=9.8,<10"),  # the tightest bounds
    (">=8.9,<9", "nvidia-cudnn-cu12>=8.9,<9"),
    ("<10", "nvidia-cudnn-cu12<10"), (">=9.1", "nvidia-cudnn-cu12>=9.1"),
    ("==9.*", "nvidia-cudnn-cu12==9.*"),
    ("~=9.3", "nvidia-cudnn-cu12~=9.3"),  # other operators are kept as they are
    ("", "nvidia-cudnn-cu12"),
]


@pytest.mark.parametrize("spec, text", RENDER, ids=[s or "any" for s, _ in RENDER])
def test_render_requirement(spec, text):
    assert render_requirement("nvidia-cudnn-cu12", SpecifierSet(spec)) == text


def test_render_refuses_a_bad_distribution_name():
    with pytest.raises(ValueError):
        render_requirement("nvidia cudnn; rm -rf", SpecifierSet(">=9"))


@pytest.mark.parametrize("spec, lowest", [
    # an inclusive lower bound or an exact pin is itself the lowest version; None: nothing satisfies
    (">=9.3.0.75,<10", "9.3.0.75"), ("==9.10.2.21", "9.10.2.21"), (">=9.1.9,<9.2", "9.1.9"),
    (">=10,<10", None), (">=9.10.0,<9.10.0.1,!=9.10.0", None), ("", "0"),
    # otherwise some satisfying version
    (">9.3,<10", ...), (">9.3.0,<9.4", ...), ("<10", ...), (">=9.8,<10,!=9.8.*", ...),
    (">=9.10,!=9.10.0.*,<9.11", ...), (">8,<9", ...),
])
def test_witness(spec, lowest):
    s = SpecifierSet(spec)
    w = witness(s)
    if lowest is ...:
        assert w is not None and s.contains(w)
    else:
        assert (str(w) if w is not None else None) == lowest


def test_solution_for_agreeing_frameworks():
    a = _fw("tensorflow", "9.3", name="TensorFlow", version="2.21.0")
    b = _fw("jax", "9.8.0", name="JAX", version="0.12.0")
    sol = solve_cudnn([a, b])
    assert sol.requirement == "nvidia-cudnn-cu12>=9.8,!=9.10.0.*,<10"
    assert sol.conflicts == ()
    assert sol.choices == (("TensorFlow 2.21.0", "nvidia-cudnn-cu12>=9.3,<10"),
                           ("JAX 0.12.0", "nvidia-cudnn-cu12>=9.8,!=9.10.0.*,<10"))


def test_conflicts_are_named():
    a = _fw("pytorch", "9.10.2", pins=("nvidia-cudnn-cu12==9.10.2.21",), name="PyTorch", version="2.9.1")
    b = _fw("jax", "9.8.0", name="JAX", version="0.12.0")
    c = _fw("pytorch", "9.24.0", cuda="13.0", pins=("nvidia-cudnn-cu13==9.24.0.43",), name="PyTorch", version="2.14.1")
    d = _fw("tensorflow", "9.11", name="TensorFlow", version="2.22.0")
    sol = solve_cudnn([a, d])
    assert sol.requirement is None
    assert sol.conflicts == ("PyTorch 2.9.1 needs nvidia-cudnn-cu12==9.10.2.21 but TensorFlow 2.22.0 needs "
                             "nvidia-cudnn-cu12>=9.11,<10",)
    assert sol.choices == (("PyTorch 2.9.1", "nvidia-cudnn-cu12==9.10.2.21"), ("TensorFlow 2.22.0", "nvidia-cudnn-cu12>=9.11,<10"))
    fam = solve_cudnn([b, c])
    assert fam.conflicts == ("JAX 0.12.0 needs nvidia-cudnn-cu12>=9.8,!=9.10.0.*,<10 but PyTorch 2.14.1 needs "
                             "nvidia-cudnn-cu13==9.24.0.43 (different CUDA wheel families; one process loads one libcudnn)",)
    alone = _fw("jax", "9.10.0", pins=("nvidia-cudnn-cu12==9.10.0.56",), name="JAX", version="0.6.1")
    sol = solve_cudnn([alone])
    assert len(sol.conflicts) == 1 and sol.conflicts[0].startswith("JAX 0.6.1 alone is unsatisfiable (nvidia-cudnn-cu12")
    assert "==9.10.0.56" in sol.conflicts[0] and "!=9.10.0.*" in sol.conflicts[0]


def test_three_that_agree_pairwise_but_not_together():
    a = _fw("tensorflow", None, pins=("nvidia-cudnn-cu12>=9.1,<9.3",), name="A")  # 9.1, 9.2
    b = _fw("tensorflow", None, pins=("nvidia-cudnn-cu12>=9.2,<9.4",), name="B")  # 9.2, 9.3
    c = _fw("tensorflow", None, pins=("nvidia-cudnn-cu12>=9.1,<9.4,!=9.2.*",), name="C")  # 9.1, 9.3
    sol = solve_cudnn([a, b, c])
    assert sol.requirement is None
    assert sol.conflicts == ("no single version satisfies A 1.0, B 1.0, C 1.0 together",)
    assert len(sol.choices) == 3


def test_no_framework():
    sol = solve_cudnn([_fw("pytorch", None)])
    assert sol.requirement is None
    assert sol.conflicts == ("no installed framework needs cuDNN",)


def test_a_pin_with_only_an_upper_bound_is_satisfiable():
    # Requires-Dist "nvidia-cudnn-cu12<9" (no lower bound) accepts every cuDNN 8 wheel
    sol = solve_cudnn([_fw("tensorflow", None, pins=("nvidia-cudnn-cu12<9",), name="A")])
    assert sol.conflicts == ()
    assert sol.requirement == "nvidia-cudnn-cu12<9"
