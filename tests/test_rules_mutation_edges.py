"""Edge tables written against the survivors of the mutation run (issue 20): rules.

Each row states a rule at its edge, with the source of the fact in a comment; assertions are on
what a caller sees (the verdict, the finding and fix ids, the fix title, the rule-bearing words of
a sentence). Sources: /work/shared/FACTS.md ("Which runtime cuDNN each framework accepts",
"cuDNN version encoding", "Two cuDNNs at once"), the frameworks' own checks as each table names,
PEP 440 / PEP 508 via ``packaging``. The survivors left are listed in tests/mutation_survivors.md.
"""

from __future__ import annotations

import pytest

from cudnn_magic.check import judge_report
from cudnn_magic.model import CudnnInUse, FrameworkBuild, LibraryCopy
from cudnn_magic.rules.compat import judge

# --------------------------------------------------------------------------------------------
# rules.requirement.cudnn_requirement, through the check's install-matching-cudnn fix: a framework
# whose mapped cuDNN its rule refuses gets "Install <requirement>". The requirement is its own
# exact (==) or lower-bounded (>=) nvidia-cudnn-cuXX pin, markers cut off (Requires-Dist of the
# torch / tensorflow[and-cuda] wheels, FACTS.md "Where each framework's compiled-against versions
# come from"); else the wheel family of the CUDA it was built for with NVIDIA's same-major rule
# (>=MAJOR.MINOR,<MAJOR+1; PyPI nvidia-cudnn-cu11/-cu12/-cu13 histories: no cuDNN 8 wheel past cu12).

INSTALL = [
    # checker, compiled, cuda, pins, mapped runtime -> requirement in the fix title
    ("pytorch", "9.10.2", "12.8", ('nvidia-cudnn-cu12==9.10.2.21; platform_system == "Linux"',), "9.1.0",
     "nvidia-cudnn-cu12==9.10.2.21"),  # an exact pin, its marker cut off
    ("tensorflow", "9.3", "12.5.1", ('nvidia-cudnn-cu12<10,>=9.3.0.75; extra == "and-cuda"',), "9.1.0",
     "nvidia-cudnn-cu12<10,>=9.3.0.75"),  # a lower-bounded pin (no ==) is used as it is
    ("tensorflow", "9.3", "12.5.1", ("nvidia-cublas-cu12==12.5.3.2",), "9.1.0",
     "nvidia-cudnn-cu12>=9.3,<10"),  # another library's pin is not a cuDNN requirement
    ("tensorflow", "9.3", "12.5.1", ("nvidia-cudnn-cu12<10",), "9.1.0",
     "nvidia-cudnn-cu12>=9.3,<10"),  # a pin with only an upper bound says nothing about the minor
    ("tensorflow", "9.3", "12.5.1", (), "9.1.0", "nvidia-cudnn-cu12>=9.3,<10"),
    ("tensorflow", "9.3", "13.0", (), "9.1.0", "nvidia-cudnn-cu13>=9.3,<10"),  # the CUDA major picks the family
    ("tensorflow", "9", None, (), "8.9.7", "nvidia-cudnn-cu12>=9,<10"),  # unknown CUDA: cuDNN 9 pairs with cu12
    ("pytorch", "8.9.7", None, (), "8.5.0", "nvidia-cudnn-cu11>=8.9,<9"),  # unknown CUDA: cuDNN 8 with cu11
    ("pytorch", "8.9.7", "13.0", (), "8.5.0", "nvidia-cudnn-cu12>=8.9,<9"),  # no cuDNN 8 wheel for CUDA 13
]


@pytest.mark.parametrize("checker, compiled, cuda, pins, runtime, requirement", INSTALL,
                         ids=[f"{c}-{v}-{cu}-{len(p)}" for c, v, cu, p, _, _ in INSTALL])
def test_install_fix_names_the_requirement(checker, compiled, cuda, pins, runtime, requirement):
    soname = f"libcudnn.so.{compiled.split('.')[0]}"
    fw = FrameworkBuild("F", "f", "1.0", cudnn_compiled=compiled, cuda_compiled=cuda, checker=checker, pins=pins,
                        cudnn_soname=soname)
    path = f"/nowhere/lib/{soname}"
    copy = LibraryCopy(path, soname, soname, version=runtime, loaded=True, is_main=True)
    report = judge_report(loaded=(copy,), installed=(copy,), frameworks=(fw,), driver=None, gpus=(), ldcache={},
                          environ={}, in_use=(CudnnInUse(path, runtime, "mapped", soname),))
    (row,) = report.frameworks
    assert row.verdict == "mismatch"
    (finding,) = [f for f in report.findings if f.id == "cudnn-version-mismatch"]
    fixes = [x for x in finding.fixes if x.id == "install-matching-cudnn"]
    assert [x.title for x in fixes] == [f"Install {requirement}"]
    assert f"pip install '{requirement}'" in fixes[0].action


def test_no_install_fix_without_a_compiled_version_or_pin():
    # Nothing known about what it was built with: the rule cannot refuse, so nothing is offered.
    fw = FrameworkBuild("F", "f", "1.0", cudnn_compiled=None, checker="tensorflow", cudnn_soname="libcudnn.so.9")
    copy = LibraryCopy("/nowhere/lib/libcudnn.so.9", "libcudnn.so.9", "libcudnn.so.9", version="9.1.0", loaded=True,
                       is_main=True)
    report = judge_report(loaded=(copy,), installed=(copy,), frameworks=(fw,), driver=None, gpus=(), ldcache={},
                          environ={}, in_use=(CudnnInUse(copy.path, "9.1.0", "mapped", "libcudnn.so.9"),))
    assert report.frameworks[0].verdict == "unknown"
    assert not [x for f in report.findings for x in f.fixes if x.id == "install-matching-cudnn"]


# --------------------------------------------------------------------------------------------
# rules.compat.judge for JAX: which of its two checks refuses (FACTS.md "JAX's Python-side
# check": jax_plugins/xla_cuda12/__init__.py compares cudnn_build_version // 100 with the FULL
# runtime number, so every real cuDNN passes it; XLA's cuda_dnn.cc CudnnSupport::Init then needs
# the same major and runtime minor >= build minor). The arithmetic's edge (equal, one below) is
# stated with runtime numbers below 1000 (a "0.9.8" runtime encodes to 908), the only numbers at
# which JAX's Python comparison can refuse.
JAX_PYTHON_CHECK = [
    # runtime, compiled -> the Python-side clause
    ("9.1.0", "9.8.0", "passes it when the CUDA plugin initializes (cudnn_build_version // 100 = 908 <= 90100)"),
    ("0.9.8", "9.8.0", "passes it when the CUDA plugin initializes (cudnn_build_version // 100 = 908 <= 908)"),  # equal
    ("0.9.8", "9.8.5", "passes it when the CUDA plugin initializes (cudnn_build_version // 100 = 908 <= 908)"),  # // drops the patch
    ("0.9.7", "9.8.0", "refuses it when the CUDA plugin initializes (cudnn_build_version // 100 = 908 > 907)"),  # one below
    ("8.9.7", "9.8.0", "passes it when the CUDA plugin initializes (cudnn_build_version // 100 = 908 <= 8907)"),
]


@pytest.mark.parametrize("runtime, compiled, clause", JAX_PYTHON_CHECK, ids=[f"{r}-vs-{c}" for r, c, _ in JAX_PYTHON_CHECK])
def test_jax_python_side_check_at_its_edge(runtime, compiled, clause):
    j = judge("jax", runtime, compiled)
    assert j.ok is False  # XLA's C++ check: another major, or an older minor
    assert f"; JAX's Python-side check {clause}; XLA's C++ check refuses it when the GPU backend" in j.detail


@pytest.mark.parametrize("runtime, compiled, start", [
    # a version without a patch has no cudnnGetVersion() number: only the C++ check is named
    ("9.1", "9.8", "cuDNN 9.1 is older than the 9.8 it was built with; XLA's C++ check refuses it"),
    ("9.1.0", "9.8", "cuDNN 9.1.0 is older than the 9.8 it was built with; XLA's C++ check refuses it"),
    ("9.1", "9.8.0", "cuDNN 9.1 is older than the 9.8 it was built with; XLA's C++ check refuses it"),
    ("8.9", "9.8", "cuDNN 8.9 is a different major version than the 9.8 it was built with; XLA's C++ check"),
])
def test_jax_without_a_runtime_or_build_number(runtime, compiled, start):
    j = judge("jax", runtime, compiled)
    assert j.ok is False
    assert j.detail.startswith(start)
    assert "Python-side" not in j.detail
