"""Every encoding and rule in docs/facts.md, table-driven, at the edges."""

from __future__ import annotations

import pytest

from cudnn_magic.rules.cudnn_version import CudnnVersion, parse_cudnn_version, try_parse
from cudnn_magic.rules.compat import checker_for_tensorflow, judge
from cudnn_magic.rules.build_tables import cuda_from_int, tf_tested_build
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
