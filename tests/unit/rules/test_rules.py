"""Every encoding and rule in docs/facts.md, table-driven, at the edges."""

from __future__ import annotations

import pytest

from cudnn_magic.engines.check import judge_report
from cudnn_magic.model import CudnnInUse, FrameworkBuild, LibraryCopy
from cudnn_magic.rules.build_tables import cuda_from_int, tf_tested_build
from cudnn_magic.rules.compat import RULES, checker_for_tensorflow, judge
from cudnn_magic.rules.cudnn_version import CudnnVersion, parse_cudnn_version, try_parse
from cudnn_magic.rules.gpu import cudnn_compute_capability_range, driver_at_least, driver_floor


@pytest.mark.parametrize("raw, expected", [
    (5005, "5.0.5"), (5103, "5.1.3"), (5110, "5.1.10"), (7005, "7.0.5"), (7103, "7.1.3"), (7605, "7.6.5"),
    (8906, "8.9.6"), (8801, "8.8.1"), (90100, "9.1.0"), (91002, "9.10.2"), (92800, "9.28.0"), (92801, "9.28.1"),
    ("5005", "5.0.5"), ("90100", "9.1.0"), ("8.9.4", "8.9.4"), ("8.1.0.77", "8.1.0.77"), ("9", "9"),
    ("(8, 9, 2)", "8.9.2"), ("(9,1,0)", "9.1.0"), ((9, 3, 0), "9.3.0"), ("v8.9", "8.9"), (" 7.4.1 ", "7.4.1"),
    ("8", "8"), (9, "9"),
])
def test_every_encoding(raw, expected):
    assert str(parse_cudnn_version(raw)) == expected


@pytest.mark.parametrize("raw", ["", "abc", "9.x", "500", -1, None, True, "1.2.3.4.5", 3.5])
def test_bad_input_is_a_clear_error(raw):
    with pytest.raises(ValueError):
        parse_cudnn_version(raw)
    assert try_parse(raw) is None


def test_encoded_round_trip():
    for v in ("5.1.3", "8.9.6", "9.1.0", "9.10.2"):
        cv = parse_cudnn_version(v)
        assert parse_cudnn_version(cv.encoded) == cv
    assert CudnnVersion(9).encoded is None


def test_compatibility_version_of_old_tensorflow_logs():
    # "Loaded runtime CuDNN library: 5005 (compatibility version 5000)": 5000 is major.minor 5.0
    assert parse_cudnn_version(5000).short() == "5.0"
    assert parse_cudnn_version(7100).short() == "7.1"


@pytest.mark.parametrize("checker, runtime, compiled, ok", [
    # TensorFlow >= 2.2 / XLA: same major, runtime minor >= compiled minor
    ("tensorflow", "9.3.0", "9.3", True), ("tensorflow", "9.27.0", "9.3", True),
    ("tensorflow", "9.1.0", "9.3", False), ("tensorflow", "8.9.7", "9.3", False), ("tensorflow", "10.0.0", "9.3", False),
    ("tensorflow", "8.0.5", "8.1.0", False), ("tensorflow", "8.9.4", "8.8.0", True), ("xla", "8.5.0", "8.6.0", False),
    # TensorFlow 1.x-2.1: below cuDNN 7 exact minor
    ("tensorflow-legacy", 5005, 5103, False), ("tensorflow-legacy", 5110, 5103, True),
    ("tensorflow-legacy", "7.1.1", "7.0.5", True), ("tensorflow-legacy", "7.3.1", "7.4.2", False),
    ("tensorflow-legacy", 5103, 5005, False),
    # TensorFlow before 1.13 ("compatibility version" era): major.minor equal, 7.x included
    ("tensorflow-compat-version", 7101, 7005, False), ("tensorflow-compat-version", 7005, 7003, True),
    # PyTorch
    ("pytorch", "9.10.2", "9.10.2", True), ("pytorch", "9.24.0", "9.10.2", True), ("pytorch", "8.0.3", "8.2.0", False),
    ("pytorch", "6.0.21", "6.0.20", True), ("pytorch", "5.1.10", "5.0.5", False), ("pytorch", "8.9.7", "9.1.0", False),
    # JAX: runtime >= build within major; 9.10.0 refused
    ("jax", "9.8.0", "9.8.0", True), ("jax", "9.5.1", "9.8.0", False), ("jax", "9.10.0", "9.8.0", False),
    ("jax", "9.10.1", "9.8.0", True), ("jax", "8.5.0", "8.6.0", False),
    # NVIDIA generic (CuPy 13 is judged by it)
    ("nvidia", "9.10.0", "9.3", False), ("nvidia", "9.10.1", "9.3", True), ("cupy", "8.9.6", "8.8.1", True),
    ("cupy", "8.7.0", "8.8.1", False),
    # ONNX Runtime: the major only
    ("onnxruntime", "9.1.0", "9", True), ("onnxruntime", "8.9.7", "9", False),
])
def test_rules_at_their_edges(checker, runtime, compiled, ok):
    j = judge(checker, runtime, compiled)
    assert j.ok is ok, j
    assert j.rule  # the rule is always quoted


def test_unknown_when_only_majors_agree_or_missing():
    assert judge("tensorflow", "9.1.0", "9").ok is None
    assert judge("tensorflow", None, "9.3").ok is None
    assert judge("tensorflow", "9.1.0", None).verdict == "unknown"
    assert judge("tensorflow", "8.9.7", "9").ok is False  # majors differ: decided


@pytest.mark.parametrize("tf, checker", [("1.6.0", "tensorflow-compat-version"), ("1.13.1", "tensorflow-legacy"), ("1.15.0", "tensorflow-legacy"), ("2.1.0", "tensorflow-legacy"),
                                         ("2.2.0", "tensorflow"), ("2.21.0", "tensorflow"), ("junk", "tensorflow")])
def test_tensorflow_checker_by_release(tf, checker):
    assert checker_for_tensorflow(tf) == checker


@pytest.mark.parametrize("tf, cudnn, cuda", [
    ("2.21.0", "9.3", "12.5"), ("2.18.0", "9.3", "12.5"), ("2.17.0", "8.9", "12.3"), ("2.16.1", "8.9", "12.3"),
    ("2.15.0", "8.9", "12.2"), ("2.14.0", "8.7", "11.8"), ("2.13.0", "8.6", "11.8"), ("2.12.0", "8.6", "11.8"),
    ("2.11.0", "8.1", "11.2"), ("2.5.0", "8.1", "11.2"), ("2.4.0", "8.0", "11.0"), ("2.3.0", "7.6", "10.1"),
    ("2.1.0", "7.6", "10.1"), ("2.0.0", "7.4", "10.0"), ("1.13.1", "7.4", "10.0"), ("1.12.0", "7", "9"),
    ("2.6.0rc1", "8.1", "11.2"), ("2.15.0.post1", "8.9", "12.2"),
])
def test_tensorflow_tested_builds(tf, cudnn, cuda):
    assert tf_tested_build(tf) == (cudnn, cuda)


def test_tensorflow_outside_the_table():
    assert tf_tested_build("0.12.0") is None
    assert tf_tested_build("nonsense") is None


def test_cuda_and_driver_floors():
    assert cuda_from_int(12090) == "12.9" and cuda_from_int(11080) == "11.8" and cuda_from_int(13000) == "13.0"
    assert driver_floor("12.5.1") == "525.60.13" and driver_floor("13.0") == "580" and driver_floor("11.8") == "450.80.02"
    assert driver_floor("12.5", windows=True) == "527.41"
    assert driver_floor(None) is None and driver_floor("x") is None
    assert driver_at_least("550.54.15", "525.60.13") is True
    assert driver_at_least("525.60.12", "525.60.13") is False
    assert driver_at_least("384.69", "450.80.02") is False
    assert driver_at_least("", "1") is None


def test_compute_capability_ranges():
    assert cudnn_compute_capability_range(CudnnVersion(9, 17, 0)) == ((7, 5), (12, 1))
    assert cudnn_compute_capability_range(CudnnVersion(9, 10, 2)) == ((5, 0), (12, 0))
    assert cudnn_compute_capability_range(CudnnVersion(8, 9, 7)) == ((5, 0), (9, 0))
    assert cudnn_compute_capability_range(CudnnVersion(9)) is None


# --------------------------------------------------------------------------------------------------
# The version rules at their edges.
#
# The version rules and encodings at their edges: each row is a fact with its source, on each side
# of every boundary (equal, one below, one above), for each era of each framework's rule.
# Sources: docs/facts.md "cuDNN version encoding", "Which runtime cuDNN each framework accepts",
# "Drivers", "TensorFlow tested build configurations"; the frameworks' own code as named.
# --------------------------------------------------------------------------------------------------


# --- encodings: cudnn.h CUDNN_VERSION, 8.x: major*1000 + minor*100 + patch; 9.x: major*10000 +
# minor*100 + patch (docs/facts.md "cuDNN version encoding"); below 100 a bare major; 100-999 nothing.
ENCODINGS = [
    (0, CudnnVersion(0)),
    (99, CudnnVersion(99)),
    (1000, CudnnVersion(1, 0, 0)),
    (1001, CudnnVersion(1, 0, 1)),
    (8999, CudnnVersion(8, 9, 99)),
    (9999, CudnnVersion(9, 9, 99)),
    (10000, CudnnVersion(1, 0, 0)),
    (10001, CudnnVersion(1, 0, 1)),
    (90000, CudnnVersion(9, 0, 0)),
    (91099, CudnnVersion(9, 10, 99)),
    (8101, CudnnVersion(8, 1, 1)),
    (7605, CudnnVersion(7, 6, 5)),
]


@pytest.mark.parametrize("value, expected", ENCODINGS, ids=[str(v) for v, _ in ENCODINGS])
def test_from_int_at_each_encoding_boundary(value, expected):
    assert CudnnVersion.from_int(value) == expected
    assert parse_cudnn_version(value) == expected
    assert parse_cudnn_version(str(value)) == expected


@pytest.mark.parametrize("value", [-1, 100, 101, 500, 999])
def test_numbers_outside_every_encoding_are_refused(value):
    with pytest.raises(ValueError):
        CudnnVersion.from_int(value)
    assert try_parse(value) is None


@pytest.mark.parametrize("version, encoded", [
    (CudnnVersion(8, 9, 7), 8907), (CudnnVersion(7, 6, 5), 7605), (CudnnVersion(9, 0, 0), 90000),
    (CudnnVersion(9, 10, 2), 91002), (CudnnVersion(10, 1, 0), 100100), (CudnnVersion(8, 0, 5), 8005),
    (CudnnVersion(9, 1), None), (CudnnVersion(9), None), (CudnnVersion(8, None, 3), None),
])
def test_encoded_is_what_cudnnGetVersion_returns(version, encoded):
    assert version.encoded == encoded
    if encoded is not None:
        assert CudnnVersion.from_int(encoded) == version


@pytest.mark.parametrize("version, text, short", [
    (CudnnVersion(9), "9", "9"), (CudnnVersion(9, 1), "9.1", "9.1"), (CudnnVersion(9, 1, 0), "9.1.0", "9.1"),
    (CudnnVersion(8, 1, 0, 77), "8.1.0.77", "8.1"), (CudnnVersion(9, 0, 0), "9.0.0", "9.0"),
])
def test_text_forms(version, text, short):
    assert str(version) == text
    assert version.short() == short


@pytest.mark.parametrize("raw, expected", [
    ([9, 1, 0], CudnnVersion(9, 1, 0)), ((9,), CudnnVersion(9)), ((8, 1, 0, 77), CudnnVersion(8, 1, 0, 77)),
    ("(9, 1)", CudnnVersion(9, 1)), ("9,1,0", CudnnVersion(9, 1, 0)), ("( 9 , 1 , 0 )", CudnnVersion(9, 1, 0)),
    ("V9.1", CudnnVersion(9, 1)), ("9.1.0.70", CudnnVersion(9, 1, 0, 70)), (CudnnVersion(9, 2), CudnnVersion(9, 2)),
    ("\t9.1.0\n", CudnnVersion(9, 1, 0)),
])
def test_every_accepted_shape(raw, expected):
    assert parse_cudnn_version(raw) == expected


@pytest.mark.parametrize("raw", [(), (1, 2, 3, 4, 5), [], "9.1.0.0.0", "x9.1", "9.1a", "9..1", "(9)", False, 9.1, {}])
def test_every_refused_shape(raw):
    with pytest.raises(ValueError):
        parse_cudnn_version(raw)
    assert try_parse(raw) is None


# --- each framework's rule, each era (docs/facts.md "Which runtime cuDNN each framework accepts";
# torch/backends/cudnn/__init__.py _init; XLA cuda_dnn.cc IsSourceCompatibleWithCudnnLibrary;
# TF 1.13-2.1 stream_executor/cuda/cudnn_version.cc; TF < 1.13 cuda_dnn.cc compatibility version;
# JAX jax_plugins/xla_cuda12 _check_cuda_versions; NVIDIA cuDNN API compatibility page).
RULE_TABLE = [
    # checker, runtime, compiled, ok
    ("tensorflow", "9.3.0", "9.3.0", True),  # equal
    ("tensorflow", "9.2.9", "9.3.0", False),  # one minor below
    ("tensorflow", "9.4.0", "9.3.0", True),  # one minor above
    ("tensorflow", "9.3.0", "9.3.5", True),  # an older patch of the same minor passes (minor rule)
    ("tensorflow", "8.9.7", "9.3.0", False),  # other major
    ("tensorflow", "10.0.0", "9.3.0", False),
    ("xla", "9.8.0", "9.8.0", True), ("xla", "9.7.1", "9.8.0", False), ("xla", "9.9.0", "9.8.0", True),
    ("tensorflow-legacy", "7.4.0", "7.4.0", True), ("tensorflow-legacy", "7.3.1", "7.4.0", False),
    ("tensorflow-legacy", "7.5.0", "7.4.0", True),
    ("tensorflow-legacy", "6.0.0", "6.0.0", True), ("tensorflow-legacy", "6.1.0", "6.0.0", False),  # before 7: same minor
    ("tensorflow-legacy", "5.0.0", "5.1.0", False),
    ("tensorflow-compat-version", "7.0.5", "7.0.1", True), ("tensorflow-compat-version", "7.1.0", "7.0.5", False),
    ("tensorflow-compat-version", "7.0.5", "7.1.0", False),
    ("pytorch", "9.1.0", "9.1.0", True), ("pytorch", "9.0.0", "9.1.0", False), ("pytorch", "9.2.0", "9.1.0", True),
    ("pytorch", "7.0.0", "7.0.0", True), ("pytorch", "7.1.0", "7.0.0", True),  # from 7: newer minor ok
    ("pytorch", "6.1.0", "6.0.0", False), ("pytorch", "6.0.21", "6.0.20", True),  # below 7: same minor
    ("pytorch", "8.9.7", "9.1.0", False),
    ("cupy", "8.9.0", "8.9.0", True), ("cupy", "8.8.1", "8.9.0", False), ("cupy", "8.10.0", "8.9.0", True),
    # CuPy is judged by NVIDIA's rule, 9.10.0's break included (as the solver's requirement excludes it)
    ("cupy", "9.10.0", "9.9.0", False), ("cupy", "9.10.0", "9.10.0", True), ("cupy", "9.10.1", "9.9.0", True),
    ("nvidia", "9.10.0", "9.9.0", False),  # 9.10.0 broke backward compatibility
    ("nvidia", "9.10.0", "9.10.0", True), ("nvidia", "9.10.1", "9.9.0", True), ("nvidia", "9.11.0", "9.10.0", True),
    ("nvidia", "9.10.0", "9.0.0", False), ("nvidia", "9.10.0", "9.11.0", False),
    ("nvidia", "9.9.0", "9.9.0", True), ("nvidia", "8.9.7", "8.9.0", True),
    ("onnxruntime", "9.0.0", "9.8.0", True),  # ORT needs only the major
    ("onnxruntime", "8.9.7", "9", False), ("onnxruntime", "10.0.0", "9", False),
    ("jax", "9.8.0", "9.8.0", True), ("jax", "9.7.0", "9.8.0", False), ("jax", "9.9.0", "9.8.0", True),
    ("jax", "9.10.0", "9.8.0", False),  # the Python-side check refuses 9.10.0 unless built with it
    ("jax", "9.10.0", "9.10.0", True), ("jax", "9.10.1", "9.8.0", True), ("jax", "9.11.0", "9.10.0", True),
    ("jax", "8.9.7", "9.8.0", False),
]


@pytest.mark.parametrize("checker, runtime, compiled, ok", RULE_TABLE,
                         ids=[f"{c}-{r}-vs-{s}" for c, r, s, _ in RULE_TABLE])
def test_each_rule_at_its_edge(checker, runtime, compiled, ok):
    j = judge(checker, runtime, compiled)
    assert j.ok is ok
    assert j.rule == RULES[checker]
    assert j.verdict == {True: "ok", False: "mismatch"}[ok]
    assert str(parse_cudnn_version(runtime)) in j.detail


@pytest.mark.parametrize("checker", sorted(RULES))
def test_unknown_when_a_side_or_the_minor_is_missing(checker):
    assert judge(checker, None, "9.1.0").ok is None
    assert "runtime" in judge(checker, None, "9.1.0").detail
    assert judge(checker, "9.1.0", None).ok is None
    assert "compiled-against" in judge(checker, "9.1.0", None).detail
    assert judge(checker, "garbage", "9.1.0").ok is None
    assert judge(checker, "9.1.0", "garbage").ok is None
    assert judge(checker, "9.1.0", "garbage").verdict == "unknown"
    if checker != "onnxruntime":
        assert judge(checker, "9.1.0", "9").ok is None
        assert judge(checker, "9", "9.1.0").ok is None
        assert "not known" in judge(checker, "9.1.0", "9").detail


@pytest.mark.parametrize("checker, runtime, compiled, words", [
    ("tensorflow", "9.2.0", "9.3.0", "older than the 9.3"),
    ("tensorflow", "8.9.7", "9.3.0", "different major version than the 9.3"),
    ("tensorflow", "9.4.0", "9.3.0", "9.3 or newer within major 9"),
    ("tensorflow", "9.3.5", "9.3.0", "9.3 or newer"),  # a newer patch of the same minor is not "older"
    ("pytorch", "6.1.0", "6.0.0", "not the 6.0 it was built with"),
    ("pytorch", "6.0.2", "6.0.0", "matches the 6.0"),
    ("onnxruntime", "9.0.0", "9", "has the major version 9"),
    ("nvidia", "9.10.0", "9.9.0", "9.10.0 broke backward compatibility"),
    ("jax", "9.10.0", "9.8.0", "use 9.10.1 or later"),
    ("jax", "8.9.7", "9.8.0", "different major version than the 9.8"),
])
def test_relation_words(checker, runtime, compiled, words):
    assert words in judge(checker, runtime, compiled).detail


@pytest.mark.parametrize("runtime, compiled, verdict", [
    # JAX's Python check: cudnn_build_version // 100 <= runtime number (jax_plugins/xla_cuda12/__init__.py)
    ("9.1.0", "9.8.0", "passes it when the CUDA plugin initializes (cudnn_build_version // 100 = 908 <= 90100)"),
])
def test_jax_names_which_check_refuses(runtime, compiled, verdict):
    d = judge("jax", runtime, compiled).detail
    assert verdict in d
    assert "XLA's C++ check refuses it" in d
    assert f"Loaded runtime CuDNN library: {runtime} but source was compiled with: {compiled}" in d


def test_jax_without_encodable_versions_names_only_the_cpp_check():
    d = judge("jax", "9.1", "9.8")
    assert d.ok is False
    assert "Python-side" not in d.detail
    assert "XLA's C++ check refuses it" in d.detail


# TF < 1.13 compat version; 1.13-2.1 cudnn_version.cc; 2.2+ XLA (docs/facts.md).
@pytest.mark.parametrize("tf, checker", [
    ("1.12.3", "tensorflow-compat-version"), ("1.13.0", "tensorflow-legacy"), ("1.13.1", "tensorflow-legacy"),
    ("2.1.4", "tensorflow-legacy"), ("2.2.0", "tensorflow"), ("2.2.0rc1", "tensorflow"), ("2.16.1", "tensorflow"),
    (None, "tensorflow"), ("", "tensorflow"), ("not a version", "tensorflow"), ("1.0", "tensorflow-compat-version"),
])
def test_tensorflow_checker_eras(tf, checker):
    assert checker_for_tensorflow(tf) == checker


# tensorflow/docs site/en/install/source.md, Linux GPU table: each row's first and last release.
@pytest.mark.parametrize("tf, build", [
    ("2.18.0", ("9.3", "12.5")), ("2.21.0", ("9.3", "12.5")), ("2.17.1", ("8.9", "12.3")), ("2.16.1", ("8.9", "12.3")),
    ("2.16.0", None), ("2.15.0", ("8.9", "12.2")), ("2.14.1", ("8.7", "11.8")), ("2.13.0", ("8.6", "11.8")),
    ("2.12.0", ("8.6", "11.8")), ("2.11.0", ("8.1", "11.2")), ("2.5.0", ("8.1", "11.2")), ("2.4.0", ("8.0", "11.0")),
    ("2.3.0", ("7.6", "10.1")), ("2.1.0", ("7.6", "10.1")), ("2.0.0", ("7.4", "10.0")), ("1.13.1", ("7.4", "10.0")),
    ("1.13.0", None), ("1.12.0", ("7", "9")), ("1.5.0", ("7", "9")), ("1.4.0", None), ("2.22.0", None),
    ("2.18.0rc0", ("9.3", "12.5")), ("2.17.0.post1", ("8.9", "12.3")), ("junk", None),
])
def test_tf_tested_builds_at_each_row_edge(tf, build):
    assert tf_tested_build(tf) == build


@pytest.mark.parametrize("value, text", [(12090, "12.9"), (11080, "11.8"), (12000, "12.0"), (13010, "13.1"),
                                         (10010, "10.1"), (9020, "9.2")])
def test_cuda_encoding(value, text):
    assert cuda_from_int(value) == text


# NVIDIA CUDA minor-version compatibility page (docs/facts.md "Drivers").
@pytest.mark.parametrize("cuda, windows, floor", [
    ("13.0", False, "580"), ("12.0", False, "525.60.13"), ("12.9", False, "525.60.13"), ("11.8", False, "450.80.02"),
    ("12.5", True, "527.41"), ("11.2", True, "452.39"), ("13.0", True, None), ("10.2", False, None),
    ("12", False, "525.60.13"), (None, False, None), ("", False, None), ("twelve", False, None),
])
def test_driver_floor_per_cuda_major(cuda, windows, floor):
    assert driver_floor(cuda, windows=windows) == floor
    if floor is not None:
        assert driver_floor(cuda, windows) == floor


@pytest.mark.parametrize("driver, floor, ok", [
    ("525.60.13", "525.60.13", True),  # exactly at the floor
    ("525.60.12", "525.60.13", False), ("525.60.14", "525.60.13", True),
    ("525.59.99", "525.60.13", False), ("526.0.0", "525.60.13", True), ("524.99.99", "525.60.13", False),
    ("580", "580", True), ("579.99", "580", False), ("580.65.06", "580", True),
    ("", "580", None), ("580", "n/a", None),
])
def test_driver_at_the_floor(driver, floor, ok):
    assert driver_at_least(driver, floor) is ok


# cuDNN support matrix (docs/facts.md): 9.11+ 7.5-12.1; 9.0-9.10 5.0-12.0; 8.9 5.0-9.0; else unknown.
@pytest.mark.parametrize("cudnn, cc", [
    (CudnnVersion(9, 11, 0), ((7, 5), (12, 1))), (CudnnVersion(9, 12, 0), ((7, 5), (12, 1))),
    (CudnnVersion(9, 10, 2), ((5, 0), (12, 0))), (CudnnVersion(9, 0, 0), ((5, 0), (12, 0))),
    (CudnnVersion(10, 0, 0), ((5, 0), (12, 0))),
    (CudnnVersion(8, 9, 7), ((5, 0), (9, 0))), (CudnnVersion(8, 10, 0), ((5, 0), (9, 0))),
    (CudnnVersion(8, 8, 1), None), (CudnnVersion(9), None), (CudnnVersion(8), None), (CudnnVersion(7, 6, 5), None),
])
def test_compute_capability_range_per_release(cudnn, cc):
    assert cudnn_compute_capability_range(cudnn) == cc


# --------------------------------------------------------------------------------------------------
# Each rule's boundary as its callers see it.
#
# Each rule at its edge as a caller sees it: the verdict, the finding and fix ids, the fix title,
# the rule-bearing words of a sentence (requirements as specifiers, the witness version, consumer
# rules, driver floors and compute-capability ranges). Sources: docs/facts.md ("Which runtime cuDNN
# each framework accepts", "cuDNN version encoding", "Two cuDNNs at once"), the frameworks' own checks
# as each table names, PEP 440 / PEP 508 via ``packaging``. What no test can tell apart is listed,
# with its reason, in tests/mutation_survivors.md.
# --------------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# rules.requirement.cudnn_requirement, through the check's install-matching-cudnn fix: a framework
# whose mapped cuDNN its rule refuses gets "Install <requirement>". The requirement is its own
# exact (==) or lower-bounded (>=) nvidia-cudnn-cuXX pin, markers cut off (Requires-Dist of the
# torch / tensorflow[and-cuda] wheels, docs/facts.md "Where each framework's compiled-against versions
# come from"); else the wheel family of the CUDA it was built for with NVIDIA's same-major rule
# (>=MAJOR.MINOR,<MAJOR+1; PyPI nvidia-cudnn-cu11/-cu12/-cu13 histories: no cuDNN 8 wheel past cu12).

INSTALL = [
    # checker, compiled, cuda, pins, mapped runtime -> requirement in the fix title
    ("pytorch", "9.10.2", "12.8", ('nvidia-cudnn-cu12==9.10.2.21; platform_system == "Linux"',), "9.1.0",
     "nvidia-cudnn-cu12==9.10.2.21"),  # an exact pin, its marker cut off
    ("tensorflow", "9.3", "12.5.1", ('nvidia-cudnn-cu12<10,>=9.3.0.75; extra == "and-cuda"',), "9.1.0",
     "nvidia-cudnn-cu12<10,>=9.3.0.75"),  # tensorflow[and-cuda]'s pin, its marker cut off
    ("tensorflow", "9.3", "12.5.1", ('nvidia-cudnn-cu12<10,>=9.3.0.75; platform_system != "Windows"',), "9.1.0",
     "nvidia-cudnn-cu12<10,>=9.3.0.75"),  # a lower-bounded pin with no == anywhere is used as it is
    ("tensorflow", "9.3", "12.5.1", ("nvidia-cublas-cu12==12.5.3.2",), "9.1.0",
     "nvidia-cudnn-cu12>=9.3,<10"),  # another library's pin is not a cuDNN requirement
    ("tensorflow", "9.3", "12.5.1", ("nvidia-cudnn-cu12<10",), "9.1.0",
     "nvidia-cudnn-cu12>=9.3,<10"),  # a pin with only an upper bound says nothing about the minor
    ("tensorflow", "9.3", "12.5.1", ("nvidia-cublas-cu12==12.5.3.2", "nvidia-cudnn-cu12==9.10.2.21"), "9.1.0",
     "nvidia-cudnn-cu12==9.10.2.21"),  # another library's pin before it does not hide the cuDNN pin
    ("tensorflow", "9.3", "12.5.1", ("nvidia-cudnn-cu12>=", "nvidia-cudnn-cu12==9.10.2.21"), "9.1.0",
     "nvidia-cudnn-cu12==9.10.2.21"),  # nor does a pin that is not a PEP 508 requirement
    ("pytorch", "9.10.2", "12.8", ("nvidia-cudnn-cu12===9.10.2.21",), "9.1.0",
     "nvidia-cudnn-cu12===9.10.2.21"),  # PEP 440 arbitrary equality is an exact pin too
    ("tensorflow", "9.3", "12.5.1", ('nvidia-cudnn-cu12<10; extra == "and-cuda"',), "9.1.0",
     "nvidia-cudnn-cu12>=9.3,<10"),  # the == of its marker is not a version bound (PEP 508)
    ("tensorflow", "9.3", "12.5.1", ('nvidia-cudnn-cu12 >= 9.3.0.75 ; extra == "and-cuda"',), "9.1.0",
     "nvidia-cudnn-cu12 >= 9.3.0.75"),  # PEP 508 allows spaces around the operator and the ';'
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
# rules.compat.judge for JAX: which of its two checks refuses (docs/facts.md "Which runtime cuDNN
# each framework accepts", JAX's Python side: jax_plugins/xla_cuda12/__init__.py compares cudnn_build_version // 100 with the FULL
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


# --------------------------------------------------------------------------------------------
# rules.consumers.judge_consumer: what a consumer row and its findings say, per branch. Sources:
# the consumer rules in rules/consumers.py's docstring (CTranslate2 vendors its cuDNN main
# library; PaddlePaddle's gpu_resources.cc warning; MXNet's src/base.cc CuDNNLibChecks); glibc's
# search order (a main library opens its sub-libraries by soname); cuDNN 8's "Could not load
# library" and cuDNN 9's "Unable to load any of {...}" aborts (docs/facts.md "Two cuDNNs at once").

from cudnn_magic.model import ConsumerLibrary, Fix, SublibraryPick  # noqa: E402
from cudnn_magic.rules.consumers import CONSUMER_RULES, ConsumerNeed, clash_findings, judge_consumer  # noqa: E402

UPGRADE = Fix("upgrade-consumer", "Install CTranslate2 4.5.0", "pip install 'ctranslate2==4.5.0'", True, True)


def _row(checker="ctranslate2", compiled="8.9.7", name="CTranslate2", version="4.4.0", detail=""):
    return FrameworkBuild(name, name.lower(), version, cudnn_compiled=compiled, checker=checker, detail=detail)


def _pick(soname, version, path=None, required=True):
    return SublibraryPick(soname, path, version, "ld.so cache" if path else "not found by the loader's search", required)


def _lib(picked="/usr/lib/libcudnn.so.8", version="8.9.7", subs=(), soname="libcudnn.so.8", **kw):
    return ConsumerLibrary("/site/ctranslate2.libs/libctranslate2.so.4", "ctranslate2 4.4.0", soname, picked=picked,
                           picked_version=version, why="ld.so cache", sublibraries=tuple(subs), **kw)


OPS8 = _pick("libcudnn_ops_infer.so.8", "8.9.7", "/usr/lib/libcudnn_ops_infer.so.8")
CNN8 = _pick("libcudnn_cnn_infer.so.8", "8.9.7", "/opt/c/libcudnn_cnn_infer.so.8")
CNN8_MISSING = _pick("libcudnn_cnn_infer.so.8", None)


@pytest.mark.parametrize("checker", ["ctranslate2", "paddle", "mxnet", "tensorrt", "soname", "some-other"])
def test_each_consumer_is_judged_by_its_own_rule(checker):
    # a checker without a rule of its own is judged by the soname it NEEDs
    j = judge_consumer(_row(checker), [_lib(subs=[OPS8])], gpus=True)
    assert j.row.rule == CONSUMER_RULES.get(checker, CONSUMER_RULES["soname"])
    j = judge_consumer(_row(checker), [], gpus=True)
    assert j.row.rule == CONSUMER_RULES.get(checker, CONSUMER_RULES["soname"])


def test_no_consumer_library_keeps_the_probe_s_own_detail():
    j = judge_consumer(_row(detail="TensorRT 10 loads cuDNN only for two plugins"), [], gpus=True)
    assert (j.row.verdict, j.row.detail) == ("not-applicable", "TensorRT 10 loads cuDNN only for two plugins")


# The directories named when nothing is found: the first six search steps, "..." when there are
# more, then always the ld.so cache and the default directories (glibc's order, ld.so(8)).
WHERE = [
    (0, "the ld.so cache and the default directories"),
    (1, "/d0; then the ld.so cache and the default directories"),
    (5, "/d0; /d1; /d2; /d3; /d4; then the ld.so cache and the default directories"),
    (6, "/d0; /d1; /d2; /d3; /d4; /d5; then the ld.so cache and the default directories"),  # exactly six: all
    (7, "/d0; /d1; /d2; /d3; /d4; /d5; ...; then the ld.so cache and the default directories"),  # one more: cut
]


@pytest.mark.parametrize("steps, where", WHERE, ids=[str(n) for n, _ in WHERE])
def test_where_the_loader_looked_for_the_main_library(steps, where):
    lib = _lib(picked=None, version=None, searched=tuple(f"/d{i}" for i in range(steps)),
               sublibrary_searched=("/never",))
    j = judge_consumer(_row(), [lib], gpus=True)
    assert j.findings[0].detail == (f"CTranslate2 4.4.0 DT_NEEDED asks for libcudnn.so.8; the loader looks in {where} "
                                    "and finds none, so its GPU code fails.")
    assert j.row.detail == j.findings[0].detail
    assert j.row.cudnn_soname == "libcudnn.so.8"


@pytest.mark.parametrize("steps, where", WHERE, ids=[str(n) for n, _ in WHERE])
def test_where_the_loader_looked_for_the_sub_libraries(steps, where):
    lib = _lib(subs=[OPS8, CNN8_MISSING], searched=("/never",),
               sublibrary_searched=tuple(f"/d{i}" for i in range(steps)))
    (f,) = judge_consumer(_row(), [lib], gpus=True).findings
    assert f"the loader would find no libcudnn_cnn_infer.so.8 (it looks in {where})." in f.detail


@pytest.mark.parametrize("optional, disk, upgrade, fixes, tail", [
    (False, [], None, [], ", so its GPU code fails."),
    (False, [], UPGRADE, ["upgrade-consumer"], ", so its GPU code fails."),
    (True, [], None, [], ", so those plugins fail."),  # TensorRT 10: only two plugins need cuDNN
    (False, [("/opt/a", "8.9.7"), ("/opt/b", None)], UPGRADE, ["add-library-path", "upgrade-consumer"],
     " (copies exist in /opt/a, /opt/b, which are not searched), so its GPU code fails."),
])
def test_main_library_not_found(optional, disk, upgrade, fixes, tail):
    lib = _lib(picked=None, version=None, how="dlopen by paddle/libs/libphi.so")
    j = judge_consumer(_row(), [lib], gpus=True, optional=optional, upgrade=upgrade,
                       disk_dirs={"libcudnn.so.8": disk, "libcudnn.so.9": [("/opt/nine", "9.1.0")]})
    (f,) = j.findings
    assert f.detail == ("CTranslate2 4.4.0 dlopen by paddle/libs/libphi.so asks for libcudnn.so.8; the loader looks in "
                        "the ld.so cache and the default directories and finds none" + tail)
    assert [x.id for x in f.fixes] == fixes
    if disk:  # the first directory that holds a copy, put on the kernel's LD_LIBRARY_PATH
        assert f.fixes[0] == Fix("add-library-path", "Put /opt/a on LD_LIBRARY_PATH for this kernel",
                                 "add /opt/a to LD_LIBRARY_PATH in the kernelspec \"env\" (kernel.json) or the shell "
                                 "that starts Jupyter, then start the kernel fresh", True)
    if upgrade:
        assert f.fixes[-1] is upgrade


@pytest.mark.parametrize("vendored, how", [(True, "its vendored copy"), (False, "/usr/lib/libcudnn.so.8 (ld.so cache)")])
def test_where_the_main_library_comes_from(vendored, how):
    j = judge_consumer(_row(), [_lib(subs=[OPS8, CNN8], vendored=vendored)], gpus=True)
    # every required sub-library found, one release: ok, and the directories they come from, sorted
    assert (j.row.verdict, j.findings) == ("ok", ())
    assert j.row.detail == f"cuDNN 8.9.7 from {how}. Its sub-libraries come from /opt/c, /usr/lib."
    assert (j.row.cudnn_used, j.row.cudnn_used_path, j.row.cudnn_soname) == ("8.9.7", "/usr/lib/libcudnn.so.8",
                                                                             "libcudnn.so.8")


def test_an_optional_sub_library_is_not_named_as_a_source():
    opt = _pick("libcudnn_heuristic.so.9", "9.1.0", "/opt/h/libcudnn_heuristic.so.9", required=False)
    graph = _pick("libcudnn_graph.so.9", "9.1.0", "/opt/g/libcudnn_graph.so.9")
    j = judge_consumer(_row(compiled="9.1.0"), [_lib(version="9.1.0", soname="libcudnn.so.9", subs=[graph, opt])],
                       gpus=True)
    assert j.row.detail == "cuDNN 9.1.0 from /usr/lib/libcudnn.so.8 (ld.so cache). Its sub-libraries come from /opt/g."


def test_unknown_runtime_version_is_a_question_mark():
    j = judge_consumer(_row(), [_lib(version=None)], gpus=True)
    assert j.row.verdict == "ok" and j.row.detail == "cuDNN ? from /usr/lib/libcudnn.so.8 (ld.so cache)."


@pytest.mark.parametrize("gpus, upgrade", [(True, UPGRADE), (False, None)])
def test_a_major_mismatch_names_the_rule_and_the_upgrade(gpus, upgrade):
    # NVIDIA cuDNN API compatibility: no release runs code built for another major
    j = judge_consumer(_row(compiled="8.9.7"), [_lib(version="9.1.0", soname="libcudnn.so.9")], gpus=gpus,
                       upgrade=upgrade)
    (f,) = j.findings
    assert (f.id, f.severity, j.row.verdict) == ("cudnn-version-mismatch", "error" if gpus else "warning", "mismatch")
    assert f.detail == ("/usr/lib/libcudnn.so.8 (ld.so cache) is cuDNN 9.1.0; no cuDNN release runs code built for "
                        f"another major (NVIDIA cuDNN API compatibility). Rule: {CONSUMER_RULES['ctranslate2']}.")
    assert f.fixes == ((upgrade,) if upgrade else ())


# PaddlePaddle (gpu_resources.cc InitDnnHandle): warns when cudnnGetVersion() is below the
# CUDNN_VERSION it was built with, at patch precision, and runs; a missing patch counts as 0.
PADDLE = [
    ("8.9.6", "8.9.7", True), ("8.9.7", "8.9.7", False), ("8.9.8", "8.9.7", False),
    ("8.8.9", "8.9.0", True), ("8.9", "8.9.7", True), ("8.9.7", "8.9", False), ("8.9.0", "8.9", False),
    ("8", "8.9.7", False),  # no minor at runtime: not comparable
]


@pytest.mark.parametrize("runtime, compiled, warns", PADDLE, ids=[f"{r}-vs-{c}" for r, c, _ in PADDLE])
def test_paddle_warns_for_an_older_runtime(runtime, compiled, warns):
    j = judge_consumer(_row("paddle", compiled, "PaddlePaddle", "2.6.2"), [_lib(version=runtime)],
                       gpus=True)
    ids = [(f.id, f.severity) for f in j.findings]
    assert ids == ([("cudnn-version-mismatch", "warning")] if warns else [])
    assert j.row.verdict == ("mismatch" if warns else "ok")
    if warns:
        f = j.findings[0]
        assert f.title == f"PaddlePaddle 2.6.2 was built with cuDNN {compiled} but will load the older {runtime}"
        cv, rv = compiled.split("."), runtime.split(".")
        assert f.detail == (f"PaddlePaddle prints \"The installed Paddle is compiled with CUDNN {cv[0]}.{cv[1]}, but CUDNN "
                            f"version in your machine is {rv[0]}.{rv[1]}, which may cause serious incompatible bug\" and "
                            f"runs; calls added after {runtime} fail. Rule: {CONSUMER_RULES['paddle']}.")
        assert f.fixes == ()


@pytest.mark.parametrize("checker", ["ctranslate2", "mxnet", "soname"])
def test_only_paddle_warns_for_an_older_minor(checker):
    j = judge_consumer(_row(checker, "8.9.7"), [_lib(version="8.9.6", subs=[])], gpus=True)
    assert j.row.verdict == "ok" and j.findings == ()


# MXNet (src/base.cc CuDNNLibChecks): prints "cuDNN lib mismatch" when the runtime differs at all,
# and runs; it needs a compiled-against version with a minor to compare.
@pytest.mark.parametrize("runtime, compiled, prints", [
    ("8.9.6", "8.9.7", True), ("8.9.8", "8.9.7", True), ("8.9.7", "8.9.7", False), ("8.9.7", "8", False),
    ("8.9.7", "8.9", True),
])
def test_mxnet_prints_when_the_runtime_differs(runtime, compiled, prints):
    j = judge_consumer(_row("mxnet", compiled, "MXNet", "1.9.1"), [_lib(version=runtime)], gpus=True)
    assert j.row.verdict == "ok" and j.findings == ()
    line = f"MXNet will print \"cuDNN lib mismatch\" ({runtime} vs {compiled}) and run."
    assert (line in j.row.detail) is prints
    assert j.row.detail.startswith(f"cuDNN {runtime} from /usr/lib/libcudnn.so.8 (ld.so cache).")


# Sub-libraries the main library opens by soname and the loader would not find. A copy on disk
# is offered on LD_LIBRARY_PATH only when it is of the main library's release (or either version
# is unknown): cuDNN's sub-libraries refuse another release (cudnn*VersionCheck).
MISSING = [
    # runtime, disk copies of the missing soname -> the directory offered, "another release" dirs
    ("8.9.7", [], None, None),
    ("8.9.7", [("/opt/same", "8.9.7")], "/opt/same (cuDNN 8.9.7)", None),
    ("8.9.7", [("/opt/z", "8.6.0"), ("/opt/a", "8.5.0")], None, "/opt/a, /opt/z"),  # sorted
    ("8.9.7", [("/opt/other", "8.6.0"), ("/opt/unk", None)], "/opt/unk (cuDNN ?)", None),  # unknown version: offered
    (None, [("/opt/any", "8.6.0")], "/opt/any (cuDNN 8.6.0)", None),  # unknown runtime: any copy
]


@pytest.mark.parametrize("runtime, disk, offered, others", MISSING, ids=[str(i) for i in range(len(MISSING))])
def test_missing_sub_library_fixes(runtime, disk, offered, others):
    lib = _lib(version=runtime, subs=[OPS8, CNN8_MISSING])
    (f,) = judge_consumer(_row(), [lib], gpus=True, upgrade=UPGRADE,
                          disk_dirs={"libcudnn_cnn_infer.so.8": disk}).findings
    assert f.id == "cudnn-sublibrary-load-failed"
    if offered:
        d = offered.split(" ")[0]
        assert f.fixes[0] == Fix("add-library-path", f"Put {d} on LD_LIBRARY_PATH for this kernel",
                                 f"add {offered} to LD_LIBRARY_PATH in the kernelspec \"env\" (kernel.json) or the "
                                 "shell that starts Jupyter, then start the kernel fresh", True)
        assert [x.id for x in f.fixes] == ["add-library-path", "upgrade-consumer"]
    else:
        assert f.fixes == (UPGRADE,)
    tail = (f" Copies of another release exist in {others}: cuDNN refuses sub-libraries of another release."
            if others else "")
    assert f.detail.endswith('"Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot '
                             'open shared object file" and the process aborts.' + tail)


# The first convolution's abort, by the major of the library that opens the sub-library (cuDNN
# 8: "Could not load library ..."; 9: "Unable to load any of {...}" / "Invalid handle"); the major
# comes from the runtime, else from what it was built with.
ABORT = [
    ("8.9.7", "9.1.0", "8", '"Could not load library libcudnn_x.so. Error: libcudnn_x.so: cannot open shared object file"'),
    ("9.1.0", "9.1.0", "9", '"Unable to load any of {libcudnn_x.so, ...}" / "Invalid handle. Cannot load symbol ..."'),
    (None, "8.9.7", "8", '"Could not load library libcudnn_x.so. Error: libcudnn_x.so: cannot open shared object file"'),
    (None, "9.1.0", "9", '"Unable to load any of {libcudnn_x.so, ...}"'),
    (None, None, "", '"Unable to load any of {libcudnn_x.so, ...}"'),
]


@pytest.mark.parametrize("runtime, compiled, major, words", ABORT, ids=[str(i) for i in range(len(ABORT))])
def test_missing_sub_library_names_the_abort_of_its_major(runtime, compiled, major, words):
    lib = _lib(version=runtime, subs=[_pick("libcudnn_x.so", None)])
    j = judge_consumer(_row(compiled=compiled), [lib], gpus=True)
    (f,) = [f for f in j.findings if f.id == "cudnn-sublibrary-load-failed"]
    assert f"The first GPU convolution prints {words}" in f.detail
    assert f.detail.startswith(f"CTranslate2 4.4.0 uses cuDNN {runtime or '?'} from /usr/lib/libcudnn.so.8 (ld.so cache); "
                               "that main library opens its sub-libraries by soname at run time, and the loader would "
                               "find no libcudnn_x.so (it looks in the ld.so cache and the default directories). ")
    assert f.title == (f"CTranslate2 4.4.0: cuDNN {runtime} will not find libcudnn_x.so" if runtime else
                       "CTranslate2 4.4.0: cuDNN will not find libcudnn_x.so")
    assert (f"Its cuDNN {major} sub-libraries will not load (libcudnn_x.so not found)." if major else
            "Its cuDNN sub-libraries will not load (libcudnn_x.so not found).") in j.row.detail


@pytest.mark.parametrize("optional, gpus, verdict, severity", [
    (False, True, "mismatch", "error"), (False, False, "mismatch", "warning"), (True, True, "ok", "warning"),
])
def test_missing_sub_libraries_verdict(optional, gpus, verdict, severity):
    lib = _lib(subs=[OPS8, CNN8_MISSING, _pick("libcudnn_adv_infer.so.8", None)])
    j = judge_consumer(_row(), [lib], gpus=gpus, optional=optional)
    (f,) = j.findings
    assert (j.row.verdict, f.severity) == (verdict, severity)
    names = "libcudnn_cnn_infer.so.8, libcudnn_adv_infer.so.8"
    assert f.title == f"CTranslate2 4.4.0: cuDNN 8.9.7 will not find {names}"
    assert f"the loader would find no {names} (it looks in" in f.detail
    if optional:  # TensorRT 10's two plugins: they fail, nothing aborts
        assert f.detail.endswith("Those plugins fail.") and "GPU convolution" not in f.detail
    else:
        assert "The first GPU convolution prints \"Could not load library libcudnn_cnn_infer.so.8." in f.detail
    assert j.row.detail.endswith(f"Its cuDNN 8 sub-libraries will not load ({names} not found).")


@pytest.mark.parametrize("gpus", [True, False])
def test_mixed_sub_libraries(gpus):
    # cuDNN's sub-libraries check each other's release (CUDNN_STATUS_VERSION_MISMATCH)
    mixed = [OPS8, _pick("libcudnn_cnn_infer.so.8", "8.9.6", "/opt/c/libcudnn_cnn_infer.so.8")]
    j = judge_consumer(_row(), [_lib(subs=mixed)], gpus=gpus)
    (f,) = j.findings
    assert (j.row.verdict, f.id, f.severity) == ("mismatch", "cudnn-sublibrary-load-failed", "error" if gpus else "warning")
    assert f.title == "CTranslate2 4.4.0: its cuDNN sub-libraries would come from different releases"
    assert f.detail == ("libcudnn_ops_infer.so.8 8.9.7, libcudnn_cnn_infer.so.8 8.9.6. cuDNN's sub-libraries check each "
                        "other's release (cudnn*VersionCheck: CUDNN_STATUS_VERSION_MISMATCH / "
                        "SUBLIBRARY_VERSION_MISMATCH).")
    assert f.fixes == (Fix("reinstall-cudnn", "Use one cuDNN release for all sub-libraries",
                           "remove the stray directory from LD_LIBRARY_PATH or reinstall the cuDNN whose files are mixed",
                           True),)
    assert j.row.detail == "cuDNN 8.9.7 from /usr/lib/libcudnn.so.8 (ld.so cache)."  # no "come from" sentence


def test_older_sub_libraries_under_a_cudnn8_main_library():
    # a cuDNN 8 main library forwards every call to its sub-libraries (docs/facts.md)
    older = [_pick("libcudnn_ops_infer.so.8", "8.9.6", "/usr/lib/libcudnn_ops_infer.so.8")]
    j = judge_consumer(_row(), [_lib(subs=older)], gpus=True)
    (f,) = j.findings
    assert (j.row.verdict, f.severity, f.fixes) == ("ok", "warning", ())
    assert f.detail == ("libcudnn_ops_infer.so.8 8.9.6. A cuDNN 8 main library forwards every call to its "
                        "sub-libraries; calls added after their release abort with \"Could not load symbol\".")
    assert j.row.detail == "cuDNN 8.9.7 from /usr/lib/libcudnn.so.8 (ld.so cache)."


# --------------------------------------------------------------------------------------------
# rules.consumers.clash_findings: consumers that meet in one kernel (docs/facts.md "Two cuDNNs at
# once": cuDNN 8 and 9 have different sonames and load side by side; one soname loaded once is
# reused by every later user, so for one major the first import decides).

def _need(label, major, subs, upgrade=None):
    return ConsumerNeed(label, major, tuple(subs), upgrade=upgrade)


G9 = "/site/nvidia/cudnn/lib/libcudnn_graph.so.9"
TORCH = _need("PyTorch 2.9.1", 9, [_pick("libcudnn_graph.so.9", "9.10.2", G9)])
CT2 = _need("CTranslate2 4.4.0", 8, [_pick("libcudnn_ops_infer.so.8", None), _pick("libcudnn_cnn_infer.so.8", None),
                                     _pick("libcudnn_adv_infer.so.8", None, required=False)])


@pytest.mark.parametrize("gpus", [True, False])
def test_a_clash_names_both_majors_and_what_is_missing(gpus):
    (f,) = clash_findings([CT2, TORCH], gpus=gpus)
    assert (f.id, f.severity) == ("cudnn-consumer-clash", "error" if gpus else "warning")
    assert f.title == "CTranslate2 4.4.0 needs cuDNN 8, but this environment's cuDNN is 9 (for PyTorch 2.9.1)"
    # only the required sub-libraries are named
    assert f.detail == ("CTranslate2 4.4.0 loads a cuDNN 8 main library whose sub-libraries (libcudnn_ops_infer.so.8, "
                        "libcudnn_cnn_infer.so.8) nothing here provides; PyTorch 2.9.1 use cuDNN 9. cuDNN 8 and 9 have "
                        "different sonames and load side by side in one process, so import order does not help: the "
                        "versions must agree, or the two must run in separate kernels.")
    assert f.fixes == (Fix("separate-kernels", "Run CTranslate2 4.4.0 and PyTorch 2.9.1 in separate kernels",
                           "create a separate environment (python -m venv) for CTranslate2 4.4.0 with a cuDNN 8 "
                           "installation, and a kernel for it (python -m ipykernel install --user --name ...)", True),)


def test_a_clash_offers_the_consumer_s_upgrade_first():
    ct2 = _need(CT2.label, 8, CT2.fresh, upgrade=UPGRADE)
    jax = _need("JAX 0.6.1", 9, [_pick("libcudnn_graph.so.9", "9.8.0", "/site/jax/libcudnn_graph.so.9")])
    (f,) = [f for f in clash_findings([ct2, TORCH, jax], gpus=True) if f.id == "cudnn-consumer-clash"]
    assert [x.id for x in f.fixes] == ["upgrade-consumer", "separate-kernels"]
    assert f.title.endswith("cuDNN is 9 (for PyTorch 2.9.1, JAX 0.6.1)")
    assert "; PyTorch 2.9.1, JAX 0.6.1 use cuDNN 9." in f.detail


CLASH = [
    # needs -> (broken label, its major, the other major) per finding, in order of major
    ([CT2, TORCH], [("CTranslate2 4.4.0", 8, 9)]),
    ([TORCH, CT2], [("CTranslate2 4.4.0", 8, 9)]),
    ([CT2], []),  # one major: nothing to clash with
    ([CT2, _need("B 1.0", 8, [_pick("libcudnn_ops_infer.so.8", "8.9.7", "/x/libcudnn_ops_infer.so.8")])], []),
    # the other major is not served either: this is not a clash (each is a missing library of its own)
    ([CT2, _need("T 1.0", 9, [_pick("libcudnn_graph.so.9", None)])], []),
    # a consumer with no predicted sub-libraries is neither broken nor served
    ([CT2, _need("T 1.0", 9, [])], []), ([_need("C 1.0", 8, []), TORCH], []),
    # a missing optional sub-library breaks nothing
    ([_need("C 1.0", 8, [_pick("libcudnn_ops_infer.so.8", "8.9.7", "/x/o.so.8"), _pick("libcudnn_adv_infer.so.8", None,
                                                                                          required=False)]), TORCH], []),
    ([CT2, TORCH, _need("N 1.0", None, [_pick("libcudnn_graph.so.9", None)])], [("CTranslate2 4.4.0", 8, 9)]),
    # each side broken for one consumer and served for another: one finding per broken consumer, by major
    ([_need("T 1.0", 9, [_pick("libcudnn_graph.so.9", None)]), TORCH, CT2,
      _need("B 1.0", 8, [_pick("libcudnn_ops_infer.so.8", "8.9.7", "/x/libcudnn_ops_infer.so.8")])],
     [("CTranslate2 4.4.0", 8, 9), ("T 1.0", 9, 8)]),
    ([CT2, _need("C2 1.0", 8, CT2.fresh), TORCH], [("CTranslate2 4.4.0", 8, 9), ("C2 1.0", 8, 9)]),
]


@pytest.mark.parametrize("needs, expected", CLASH, ids=[str(i) for i in range(len(CLASH))])
def test_which_consumers_clash(needs, expected):
    out = [f for f in clash_findings(needs, gpus=True) if f.id == "cudnn-consumer-clash"]
    assert [f.title.split(" needs cuDNN ")[0] for f in out] == [b for b, _, _ in expected]
    for f, (b, m, om) in zip(out, expected):
        assert f.title.startswith(f"{b} needs cuDNN {m}, but this environment's cuDNN is {om} (for ")


def _graph(label, path, version):
    return _need(label, 9, [_pick("libcudnn_graph.so.9", version, path)])


IMPORT_ORDER = [
    # needs -> the soname named, the consumer imported first (the newest copy), the directory offered
    ([_graph("PyTorch 2.9.1", G9, "9.10.2"), _graph("JAX 0.6.1", "/site/jax/lib/libcudnn_graph.so.9", "9.8.0")],
     ("PyTorch", "/site/nvidia/cudnn/lib")),
    ([_graph("JAX 0.6.1", "/site/jax/lib/libcudnn_graph.so.9", "9.11.0"), _graph("PyTorch 2.9.1", G9, "9.10.2")],
     ("JAX", "/site/jax/lib")),  # 9.11 is newer than 9.10 (not as text)
    ([_graph("A 1.0", "/a/libcudnn_graph.so.9", None), _graph("B 1.0", "/b/libcudnn_graph.so.9", "9.1.0")],
     ("B", "/b")),  # an unknown version is the oldest
    ([_graph("A 1.0", "/a/libcudnn_graph.so.9", "9.1.0"), _graph("B 1.0", None, None)], ("A", "/a")),
    ([_graph("A 1.0", "/a/libcudnn_graph.so.9", "9.1.0"), _graph("B 1.0", "/a/libcudnn_graph.so.9", "9.1.0")], None),
    ([_graph("A 1.0", "/a/libcudnn_graph.so.9", "9.1.0")], None),  # one consumer
    ([_graph("A 1.0", "/a/libcudnn_graph.so.9", "9.1.0"), _need("B 1.0", 9, [_pick("libcudnn_x.so.9", "9.1.0", "/b/x")])],
     None),  # they share no sub-library
    ([_graph("A 1.0", "/a/libcudnn_graph.so.9", "9.1.0"), _graph("B 1.0", "/b/libcudnn_graph.so.9", "9.1.0"),
      _need("C 1.0", 8, [_pick("libcudnn_graph.so.9", "9.1.0", "/c/libcudnn_graph.so.9")])], ("A", "/a")),  # first of equals
]


@pytest.mark.parametrize("needs, first", IMPORT_ORDER, ids=[str(i) for i in range(len(IMPORT_ORDER))])
def test_import_order_decides(needs, first):
    out = clash_findings(needs, gpus=True)
    if first is None:
        assert out == []
        return
    (f,) = out
    labels = sorted(n.label for n in needs if n.major == 9)
    assert (f.id, f.severity) == ("cudnn-import-order", "warning")
    assert f.title == "Import order decides which libcudnn_graph.so.9 serves " + ", ".join(labels)
    name, directory = first
    assert [x.id for x in f.fixes] == ["import-order", "add-library-path", "separate-kernels"]
    assert f.fixes[0] == Fix("import-order", f"Import {name} first",
                             f"restart the kernel and import {name} (and run one GPU operation) before the others, so "
                             "its copy is the one loaded", True)
    assert f.fixes[1] == Fix("add-library-path", "Make every consumer find the same libcudnn_graph.so.9",
                             f"put {directory} on LD_LIBRARY_PATH in the kernelspec \"env\", then start the kernel fresh",
                             True)
    assert f.fixes[2] == Fix("separate-kernels", "Run them in separate kernels",
                             "one environment and kernel per consumer whose cuDNN differs", True)


def test_import_order_sentence():
    a = _graph("PyTorch 2.9.1", G9, "9.10.2")
    b = _graph("Other 1.0", None, None)
    c = _graph("JAX 0.6.1", "/site/jax/lib/libcudnn_graph.so.9", None)
    (f,) = clash_findings([a, b, c], gpus=False)
    assert f.detail == ("In a fresh process each would load libcudnn_graph.so.9 from a different place (JAX 0.6.1: "
                        "/site/jax/lib/libcudnn_graph.so.9; Other 1.0: none found; PyTorch 2.9.1: "
                        f"{G9} (9.10.2)). In one kernel the loader reuses the libcudnn_graph.so.9 that was loaded first, so "
                        "the consumer imported (and used) first decides which copy serves all of them; Other 1.0 work "
                        "only if another consumer has loaded it first. Sub-libraries of different releases refuse each "
                        "other.")
    (f,) = clash_findings([a, c], gpus=False)
    assert f.detail.endswith("decides which copy serves all of them. Sub-libraries of different releases refuse each other.")


def test_one_import_order_finding_per_major():
    # the first soname (sorted) that resolves differently decides; the rest follow the same first load
    a = _need("A 1.0", 9, [_pick("libcudnn_graph.so.9", "9.1.0", "/a/libcudnn_graph.so.9"),
                           _pick("libcudnn_engines_precompiled.so.9", "9.1.0", "/a/libcudnn_engines_precompiled.so.9")])
    b = _need("B 1.0", 9, [_pick("libcudnn_graph.so.9", "9.2.0", "/b/libcudnn_graph.so.9"),
                           _pick("libcudnn_engines_precompiled.so.9", "9.2.0", "/b/libcudnn_engines_precompiled.so.9")])
    c = _need("C 1.0", 8, [_pick("libcudnn_ops_infer.so.8", "8.9.7", "/c/libcudnn_ops_infer.so.8")])
    d = _need("D 1.0", 8, [_pick("libcudnn_ops_infer.so.8", "8.9.6", "/d/libcudnn_ops_infer.so.8")])
    out = clash_findings([a, c, b, d], gpus=True)
    assert [f.title for f in out] == ["Import order decides which libcudnn_ops_infer.so.8 serves C 1.0, D 1.0",
                                      "Import order decides which libcudnn_engines_precompiled.so.9 serves A 1.0, B 1.0"]
    # an optional sub-library resolving differently decides nothing
    e = _need("E 1.0", 9, [_pick("libcudnn_graph.so.9", "9.1.0", G9), _pick("libcudnn_h.so.9", "9.1.0", "/e/h", False)])
    f_ = _need("F 1.0", 9, [_pick("libcudnn_graph.so.9", "9.1.0", G9), _pick("libcudnn_h.so.9", "9.2.0", "/f/h", False)])
    assert clash_findings([e, f_], gpus=True) == []


# --------------------------------------------------------------------------------------------
# rules.compat.judge: the sentence each rule gives, whole, since the user reads it as the verdict's
# reason (docs/facts.md "Which runtime cuDNN each framework accepts": XLA cuda_dnn.cc
# IsSourceCompatibleWithCudnnLibrary; TF 1.13-2.1 cudnn_version.cc; TF < 1.13 compatibility version;
# torch/backends/cudnn/__init__.py; ONNX Runtime CUDA EP requirements; NVIDIA's API compatibility
# page and 9.10.0's break; JAX's Python-side check).
DETAILS = [
    # checker, runtime, compiled -> ok, detail
    ("tensorflow", None, "9.3.0", None, "the runtime cuDNN version is not known"),
    ("tensorflow", "9.3.0", None, None, "the compiled-against cuDNN version is not known"),
    ("tensorflow", "9.3.0", "9", None, "majors agree (9); the compiled-against minor is not known"),
    ("tensorflow", "9", "9.3.0", None, "majors agree (9); the runtime minor is not known"),
    ("tensorflow", "8.9.7", "9.3.0", False, "cuDNN 8.9.7 is a different major version than the 9.3 it was built with"),
    ("tensorflow", "9.2.0", "9.3.0", False, "cuDNN 9.2.0 is older than the 9.3 it was built with"),
    ("tensorflow", "9.3.0", "9.3.0", True, "cuDNN 9.3.0 is 9.3 or newer within major 9"),
    ("xla", "9.9.0", "9.8", True, "cuDNN 9.9.0 is 9.8 or newer within major 9"),
    ("onnxruntime", "9.0.0", "9", True, "cuDNN 9.0.0 has the major version 9 it needs"),
    ("onnxruntime", "8.9.7", "9", False, "cuDNN 8.9.7 is a different major version than the 9 it was built with"),
    ("pytorch", "6.0.2", "6.0.0", True, "cuDNN 6.0.2 matches the 6.0 it was built with"),
    ("pytorch", "6.1.0", "6.0.0", False, "cuDNN 6.1.0 is not the 6.0 it was built with (this era needs the same minor)"),
    ("pytorch", "7.1.0", "7.0.0", True, "cuDNN 7.1.0 is 7.0 or newer within major 7"),  # from cuDNN 7: newer minors
    ("tensorflow-legacy", "6.1.0", "6.0.0", False,
     "cuDNN 6.1.0 is not the 6.0 it was built with (this era needs the same minor)"),
    ("tensorflow-legacy", "7.1.0", "7.0.0", True, "cuDNN 7.1.0 is 7.0 or newer within major 7"),
    ("tensorflow-compat-version", "7.1.0", "7.0.0", False,
     "cuDNN 7.1.0 is not the 7.0 it was built with (this era needs the same minor)"),
    ("tensorflow-compat-version", "7.0.4", "7.0.0", True, "cuDNN 7.0.4 matches the 7.0 it was built with"),
    ("nvidia", "9.10.0", "9.9.0", False, "cuDNN 9.10.0 broke backward compatibility with older builds (fixed in 9.10.1)"),
    ("cupy", "9.10.0", "9.9", False, "cuDNN 9.10.0 broke backward compatibility with older builds (fixed in 9.10.1)"),
    ("nvidia", "9.10.0", "9", None, "majors agree (9); the compiled-against minor is not known"),
    ("nvidia", "9.10.0", "9.10.0", True, "cuDNN 9.10.0 is 9.10 or newer within major 9"),
    ("nvidia", "9.10.1", "9.9.0", True, "cuDNN 9.10.1 is 9.9 or newer within major 9"),
    ("pytorch", "9.10.0", "9.9.0", True, "cuDNN 9.10.0 is 9.9 or newer within major 9"),  # PyTorch has no 9.10.0 rule
    ("jax", "9.10.0", "9.8.0", False, "cuDNN 9.10.0 broke backward compatibility; JAX's Python-side check refuses it "
                                      "when the CUDA plugin initializes (use 9.10.1 or later)"),
    ("jax", "9.10.0", "9.10.0", True, "cuDNN 9.10.0 is 9.10 or newer within major 9"),
    ("jax", "9.10.1", "9.8.0", True, "cuDNN 9.10.1 is 9.8 or newer within major 9"),
    ("jax", "9.11.0", "9.10.0", True, "cuDNN 9.11.0 is 9.10 or newer within major 9"),
]


@pytest.mark.parametrize("checker, runtime, compiled, ok, detail", DETAILS,
                         ids=[f"{c}-{r}-vs-{s}" for c, r, s, _, _ in DETAILS])
def test_each_rule_s_sentence(checker, runtime, compiled, ok, detail):
    j = judge(checker, runtime, compiled)
    assert (j.ok, j.detail) == (ok, detail)
    assert j.rule == RULES[checker]  # the rule is quoted with every verdict, undecided ones too
    assert j.verdict == {True: "ok", False: "mismatch", None: "unknown"}[ok]


# --------------------------------------------------------------------------------------------
# rules.cudnn_version: the refusals' messages, which a probe reports as the reason it could not
# read a version ("no usable version symbol (500 is not a cuDNN version encoding)",
# probes/loaded.py). Encodings per cuDNN's cudnn_version.h: 100-999 matches neither scheme.
from cudnn_magic.rules.cudnn_version import CudnnVersion  # noqa: E402


@pytest.mark.parametrize("value, message", [
    (-1, "negative cuDNN version -1"), (100, "100 is not a cuDNN version encoding"),
    (999, "999 is not a cuDNN version encoding"),
])
def test_from_int_says_why_it_refuses(value, message):
    with pytest.raises(ValueError) as e:
        CudnnVersion.from_int(value)
    assert str(e.value) == message


@pytest.mark.parametrize("raw", [True, (1, 2, 3, 4, 5), 9.1, "9.1a"])
def test_parse_says_what_it_refuses(raw):
    with pytest.raises(ValueError) as e:
        parse_cudnn_version(raw)
    assert str(e.value) == f"not a cuDNN version: {raw!r}"


# rules.build_tables: TensorFlow's tested builds (tensorflow/docs site/en/install/source.md, Linux
# GPU table); each row's last release is inclusive (the table writes "any patch" as .99).
@pytest.mark.parametrize("tf, build", [("2.17.99", ("8.9", "12.3")), ("2.4.99", ("8.0", "11.0")),
                                       ("2.21.99", ("9.3", "12.5")), ("2.22.0", None)])
def test_tf_tested_build_last_release_is_inclusive(tf, build):
    assert tf_tested_build(tf) == build


# --- rules.consumers: the sub-library listing and the missing major, at their edges -------------

def test_mixed_listing_names_only_sub_libraries_whose_release_is_known():
    # a found file of unknown release cannot be said to differ; it is not listed
    mixed = [OPS8, _pick("libcudnn_cnn_infer.so.8", "8.9.6", "/opt/c/libcudnn_cnn_infer.so.8"),
             _pick("libcudnn_adv_infer.so.8", None, "/opt/c/libcudnn_adv_infer.so.8")]
    (f,) = judge_consumer(_row(), [_lib(subs=mixed)], gpus=True).findings
    assert f.detail.startswith("libcudnn_ops_infer.so.8 8.9.7, libcudnn_cnn_infer.so.8 8.9.6. cuDNN's sub-libraries")


def test_older_listing_names_each_sub_library():
    older = [_pick("libcudnn_ops_infer.so.8", "8.9.6", "/usr/lib/libcudnn_ops_infer.so.8"),
             _pick("libcudnn_cnn_infer.so.8", "8.9.6", "/usr/lib/libcudnn_cnn_infer.so.8")]
    (f,) = judge_consumer(_row(), [_lib(subs=older)], gpus=True).findings
    assert f.detail.startswith("libcudnn_ops_infer.so.8 8.9.6, libcudnn_cnn_infer.so.8 8.9.6. A cuDNN 8 main library")


def test_a_clash_of_the_higher_major_only():
    # cuDNN 8 served for B, cuDNN 9 served for nobody else but broken for T: T's finding names 8
    t = _need("T 1.0", 9, [_pick("libcudnn_graph.so.9", None)])
    b = _need("B 1.0", 8, [_pick("libcudnn_ops_infer.so.8", "8.9.7", "/x/libcudnn_ops_infer.so.8")])
    (f,) = clash_findings([b, t], gpus=True)
    assert f.title == "T 1.0 needs cuDNN 9, but this environment's cuDNN is 8 (for B 1.0)"


def test_import_order_skips_sub_libraries_that_do_not_differ():
    # sorted sonames: libcudnn_a.so.9 (only A has it), libcudnn_b.so.9 (one file for both), then graph
    a = _need("A 1.0", 9, [_pick("libcudnn_a.so.9", "9.1.0", "/a/libcudnn_a.so.9"),
                           _pick("libcudnn_b.so.9", "9.1.0", "/s/libcudnn_b.so.9"),
                           _pick("libcudnn_graph.so.9", "9.1.0", "/a/libcudnn_graph.so.9")])
    b = _need("B 1.0", 9, [_pick("libcudnn_b.so.9", "9.1.0", "/s/libcudnn_b.so.9"),
                           _pick("libcudnn_graph.so.9", "9.2.0", "/b/libcudnn_graph.so.9")])
    (f,) = clash_findings([a, b], gpus=True)
    assert f.title == "Import order decides which libcudnn_graph.so.9 serves A 1.0, B 1.0"
    assert f.fixes[0].title == "Import B first"


def test_import_order_with_a_copy_of_unknown_release():
    # one consumer finds a copy (release unknown), the other none: the found copy is the one to load
    a = _graph("A 1.0", "/a/libcudnn_graph.so.9", None)
    b = _graph("B 1.0", None, None)
    c = _graph("C 1.0", None, None)
    (f,) = clash_findings([a, b, c], gpus=True)
    assert f.fixes[0].title == "Import A first"
    assert "put /a on LD_LIBRARY_PATH" in f.fixes[1].action
    assert "; B 1.0, C 1.0 work only if another consumer has loaded it first." in f.detail


def test_import_order_names_a_framework_whose_name_has_spaces():
    # the label is "<name> <version>"; the fix names the framework without its version
    a = _graph("ONNX Runtime GPU 1.22.0", "/site/onnxruntime/capi/libcudnn_graph.so.9", "9.11.0")
    b = _graph("PyTorch 2.9.1", G9, "9.10.2")
    (f,) = clash_findings([a, b], gpus=True)
    assert f.fixes[0].title == "Import ONNX Runtime GPU first"
    assert f.fixes[0].action.startswith("restart the kernel and import ONNX Runtime GPU (and run one GPU operation)")


def test_consumers_module_refuses_unknown_attributes_by_name():
    from cudnn_magic.rules import consumers

    with pytest.raises(AttributeError) as e:
        consumers.NO_SUCH_NAME  # noqa: B018
    assert str(e.value) == "module 'cudnn_magic.rules.consumers' has no attribute 'NO_SUCH_NAME'"


# --- rules.requirement: framework_need's pins, witness, render_requirement at their edges --------
# (PEP 440 / PEP 508 via packaging; the solver behind %cudnn_fix install-matching-cudnn)
from packaging.specifiers import SpecifierSet  # noqa: E402
from packaging.version import Version  # noqa: E402

from cudnn_magic.rules.requirement import framework_need, render_requirement, witness  # noqa: E402


def test_every_cudnn_pin_counts_and_they_intersect():
    fw = FrameworkBuild("X", "x", "1.0", checker="tensorflow",
                        pins=("not a requirement ===", "nvidia-cudnn-cu12>=9.1", "nvidia-cudnn-cu12<9.5"))
    need = framework_need(fw)  # an unreadable pin is skipped, not the end of the list
    assert need is not None and need.package == "nvidia-cudnn-cu12"
    assert [need.specifier.contains(v) for v in ("9.0.9", "9.1.0", "9.4.9", "9.5.0")] == [False, True, True, False]
    assert need.sources == ("pin nvidia-cudnn-cu12>=9.1 (x metadata)", "pin nvidia-cudnn-cu12<9.5 (x metadata)")


WITNESS = [
    # spec -> the lowest version the solver finds: each bound, the next patch / minor / major after it
    ("==9.*", "9"), ("==9.10.*", "9.10"),  # a wildcard's own version
    (">9,<9.1", "9.0.1"), (">9,<9.0.2", "9.0.1"), (">9.3.0,<9.3.2", "9.3.1"),  # the next patch
    (">=9.3,<9.5,!=9.3.*", "9.4"),  # the next minor
    (">=9.8,<10.5,!=9.*", "10"),  # the next major
]


@pytest.mark.parametrize("spec, lowest", WITNESS, ids=[s for s, _ in WITNESS])
def test_witness_candidates(spec, lowest):
    assert witness(SpecifierSet(spec)) == Version(lowest)


def test_witness_is_never_a_pre_release():
    # pip installs no pre-release unless asked: a pre-release bound is not itself a witness
    w = witness(SpecifierSet(">=9.1rc1,<10"))
    assert w is not None and not w.is_prerelease and SpecifierSet(">=9.1rc1,<10").contains(w)


RENDER_EDGES = [
    ("===9.1.0", "nvidia-cudnn-cu12==9.1.0"),  # arbitrary equality is an exact pin too
    ("==9.*,>=9.3", "nvidia-cudnn-cu12>=9.3,==9.*"),  # a wildcard is not an exact pin
    (">=9.3,<10,!=9.10.0.*,==9.*", "nvidia-cudnn-cu12>=9.3,==9.*,!=9.10.0.*,<10"),  # all four operators
    (">=9.10.1,<10,!=9.10.0.*", "nvidia-cudnn-cu12>=9.10.1,!=9.10.0.*,<10"),  # exclusion in the low bound's minor
    ("<10,!=9.10.0.*", "nvidia-cudnn-cu12!=9.10.0.*,<10"),  # no lower bound
    (">=0,!=9.10.0.*", "nvidia-cudnn-cu12>=0,!=9.10.0.*"),  # a lower bound of 0
    (">=9.8,<9.10.0", "nvidia-cudnn-cu12>=9.8,<9.10"),  # the upper bound written short
    (">=10,<10", "nvidia-cudnn-cu12>=10,<10"),  # nothing satisfies it: rendered as it is
]


@pytest.mark.parametrize("spec, text", RENDER_EDGES, ids=[s for s, _ in RENDER_EDGES])
def test_render_requirement_edges(spec, text):
    assert render_requirement("nvidia-cudnn-cu12", SpecifierSet(spec)) == text


def test_render_says_which_name_it_refuses():
    with pytest.raises(ValueError) as e:
        render_requirement("nvidia cudnn; rm -rf", SpecifierSet(">=9"))
    assert str(e.value) == "not a distribution name: 'nvidia cudnn; rm -rf'"
