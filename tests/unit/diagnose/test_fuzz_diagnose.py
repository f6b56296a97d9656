"""Hypothesis fuzzing of the parser (knowledge scan + diagnose) and the version extractor."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cudnn_magic.engines.diagnose import CATALOGUE, diagnose, gpu_unused_warnings
from cudnn_magic.knowledge import scan
from cudnn_magic.model import Diagnosis

FRAGMENTS = [
    "Loaded runtime CuDNN library: ", " but source was compiled with: ", "(compatibility version ", "CUDNN_STATUS_",
    "INTERNAL_ERROR", "Could not create cudnn handle: ", "cuDNN error: ", "\n", "\r\n", "Could not load library ",
    "libcudnn_ops.so.9", "Unable to load any of {", "undefined symbol: cudnn", " vs. 0)", "Failed to set cuDNN stream",
    "Memory usage: ", " bytes free, ", "possibly insufficient driver version: ", "cuDNN status ", "3000", "8.9.4",
    "(8, 9, 2)", "E0000 00:00:1700000000.000000   4242 cuda_dnn.cc:535] ", "\x00", "\udcff", "é", "Outdated cuDNN installation found",
    "Installed version: ", "Minimum supported: ", "FIND was unable to find an engine", "Cannot dlopen some GPU libraries",
]
texty = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=40)), max_size=40).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exc=texty, log=texty, tb=st.text(max_size=200))
def test_diagnose_never_raises_and_returns_catalogue_ids(exc, log, tb):
    res = diagnose(exception=exc, log=log, traceback=tb)
    assert isinstance(res, list)
    for d in res:
        assert isinstance(d, Diagnosis) and d.id in CATALOGUE and d.title
        assert all(isinstance(v, str) and len(v) <= 80 for v in d.versions.values())
    assert [d.score for d in res] == sorted((d.score for d in res), reverse=True)
    gpu_unused_warnings(log)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=3000))
def test_binary_garbage(data):
    text = data.decode("utf-8", "surrogateescape")
    scan(text)
    diagnose(exception=text, log=text)


def _enc(major, minor, patch):
    return major * 10000 + minor * 100 + patch if major >= 9 else major * 1000 + minor * 100 + patch


versions = st.tuples(st.integers(5, 12), st.integers(0, 9), st.integers(0, 9))


@settings(max_examples=200, deadline=None)
@given(rt=versions, src=versions, dotted=st.booleans(), prefix=st.sampled_from([
    "E tensorflow/stream_executor/cuda/cuda_dnn.cc:359] ", "2023-12-12 16:48:40.306928: E external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:447] ",
    "E0000 00:00:1700000000.000000   4242 cuda_dnn.cc:535] ", ""]))
def test_tf_version_extraction(rt, src, dotted, prefix):
    if dotted:
        a, b = ".".join(map(str, rt)), ".".join(map(str, src))
        line = f"{prefix}Loaded runtime CuDNN library: {a} but source was compiled with: {b}.  CuDNN library needs to have matching major version."
    else:
        line = (f"{prefix}Loaded runtime CuDNN library: {_enc(*rt)} (compatibility version {_enc(rt[0], rt[1], 0)}) "
                f"but source was compiled with {_enc(*src)} (compatibility version {_enc(src[0], src[1], 0)}).")
    res = diagnose(log=line)
    assert res[0].id == "cudnn-version-mismatch"
    assert res[0].versions["loaded"] == ".".join(map(str, rt))
    assert res[0].versions["compiled"] == ".".join(map(str, src))


@settings(max_examples=100, deadline=None)
@given(rt=versions, src=versions, verb=st.sampled_from(["found runtime version", "linked against"]), width=st.integers(40, 120))
def test_pytorch_tuple_extraction_even_wrapped(rt, src, verb, width):
    msg = (f"RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against {tuple(src)} but {verb} "
           f"{tuple(rt)}. PyTorch already comes bundled with cuDNN.")
    wrapped = "\n".join(msg[i:i + width] for i in range(0, len(msg), width))
    for text in (msg, wrapped):
        res = diagnose(exception=text)
        assert res[0].id == "cudnn-version-mismatch"
        assert res[0].versions["loaded"] == ".".join(map(str, rt))
        assert res[0].versions["compiled"] == ".".join(map(str, src))
