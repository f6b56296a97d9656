"""The version rules and encodings at their edges (issue 20: mutation testing).

Each table row is a fact with its source; the rows sit on each side of every boundary
(equal, one below, one above), for each era of each framework's rule.
Sources: docs/facts.md "cuDNN version encoding", "Which runtime cuDNN each framework
accepts", "Drivers", "TensorFlow tested build configurations"; the frameworks' own code as named.
"""

from __future__ import annotations

import pytest

from cudnn_magic.rules.build_tables import cuda_from_int, tf_tested_build
from cudnn_magic.rules.compat import RULES, checker_for_tensorflow, judge
from cudnn_magic.rules.cudnn_version import CudnnVersion, parse_cudnn_version, try_parse
from cudnn_magic.rules.gpu import cudnn_compute_capability_range, driver_at_least, driver_floor

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
