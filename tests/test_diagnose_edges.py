"""diagnose() at its edges: the relation words of a version-mismatch title, the ranking (a log
line outweighs the same words in an exception; decisive evidence promotes an ambiguous wording),
the cuDNN/CUDA pairing behind the install advice, and which warnings a succeeding cell gets
(issue 20: mutation testing).

Sources: docs/facts.md "Which runtime cuDNN each framework accepts" (the relation is the framework's
own rule), "cuDNN version encoding"; NVIDIA's nvidia-cudnn-cu11 / -cu12 wheels on PyPI (8.5 is the
first cuDNN 8 wheel for CUDA 11 on PyPI, 8.9 the first for CUDA 12); the cuDNN 8 Linux
installation guide (cuDNN 8 links zlib: libz.so.1) and its Windows guide (zlibwapi.dll).
"""

from __future__ import annotations

import logging

import pytest

from cudnn_magic.engines.diagnose import diagnose, gpu_unused_warnings

TF_VERSION = ("E tensorflow/stream_executor/cuda/cuda_dnn.cc:359] Loaded runtime CuDNN library: {rt} but source was "
              "compiled with: {src}.  CuDNN library needs to have matching major version and equal or higher minor "
              "version.")
TORCH_VERSION = ("RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against {src} but found runtime "
                 "version {rt}. PyTorch already comes bundled with cuDNN.")

RELATIONS = [
    # runtime, compiled-against, words of the title
    ("8.0.5", "8.1.0", "is older than"),  # one minor below
    ("8.1.0", "8.1.2", "is older than"),  # same minor, older patch
    ("8.1.2", "8.1.0", "is not accepted by the check against"),  # same minor, newer patch: not "older"
    ("8.1.0", "8.1.0", "is not accepted by the check against"),  # equal
    ("8.2.0", "8.1.0", "is a different minor release than"),  # one minor above
    ("7.6.5", "8.1.0", "is a different major version than"),
    ("9.0.0", "8.1.0", "is a different major version than"),
]


@pytest.mark.parametrize("rt, src, words", RELATIONS, ids=[f"{r}-vs-{s}" for r, s, _ in RELATIONS])
def test_version_mismatch_title_relation(rt, src, words):
    top = diagnose(log=TF_VERSION.format(rt=rt, src=src))[0]
    assert top.id == "cudnn-version-mismatch"
    assert top.title == f"The cuDNN loaded at runtime ({rt}) {words} the {src} TensorFlow was built with"
    assert top.versions == {"loaded": rt, "compiled": src}


@pytest.mark.parametrize("rt, src, words", [
    ("(8, 9, 2)", "(9, 1, 0)", "is a different major version than"),
    ("(9, 0, 0)", "(9, 1, 0)", "is older than"),
])
def test_pytorch_title_relation(rt, src, words):
    top = diagnose(exception=TORCH_VERSION.format(rt=rt, src=src))[0]
    loaded, compiled = (".".join(x.strip() for x in v.strip("()").split(",")) for v in (rt, src))
    assert top.id == "cudnn-version-mismatch"
    assert f"({loaded}) {words} the {compiled} PyTorch was built with" in top.title


HANDLE = "E tensorflow/stream_executor/cuda/cuda_dnn.cc:329] Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR"


def test_a_native_log_line_outweighs_the_same_words_in_an_exception():
    from_log = diagnose(log=HANDLE)
    from_exc = diagnose(exception=HANDLE)
    assert [d.id for d in from_log] == [d.id for d in from_exc] == ["cudnn-init-failed", "gpu-out-of-memory"]
    assert from_log[0].score > from_exc[0].score
    # the "also" alternative (memory) is weighed the same from either source
    assert from_log[1].score == from_exc[1].score
    assert from_log[0].score > from_log[1].score


def test_repeated_distinct_lines_add_weight_but_a_repeated_line_does_not():
    one = diagnose(log=HANDLE)[0].score
    same_twice = diagnose(log=HANDLE + "\n" + HANDLE)[0].score
    other = "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED"
    two = diagnose(log=HANDLE + "\n" + other)
    assert same_twice == one
    assert two[0].id == "cudnn-init-failed"
    assert two[0].score > max(one, diagnose(log=other)[0].score)


ALGO = "Unable to find a valid cuDNN algorithm to run convolution"
OOM = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"


def test_decisive_evidence_promotes_the_alternative_of_an_ambiguous_wording():
    # alone, the wording means an unsupported configuration, memory second
    assert [d.id for d in diagnose(exception=ALGO)][:2] == ["cudnn-unsupported-config", "gpu-out-of-memory"]
    # next to "CUDA out of memory" it is memory (torch raises it when the workspace cannot be allocated)
    assert [d.id for d in diagnose(exception=OOM, log=ALGO)][:2] == ["gpu-out-of-memory", "cudnn-unsupported-config"]


@pytest.mark.parametrize("exception, exc_type, expected", [
    ("CUDNN_STATUS_BAD_PARAM", "RuntimeError", "cudnn-bad-param"),
    ("x" * 300_000 + " CUDNN_STATUS_BAD_PARAM", None, "cudnn-bad-param"),  # the end of a huge message is kept
    ("CUDNN_STATUS_BAD_PARAM " + "x" * 300_000, None, "cudnn-bad-param"),  # and its start
])
def test_exception_text_is_read_at_both_ends(exception, exc_type, expected):
    assert diagnose(exception=exception, exc_type=exc_type)[0].id == expected


def test_the_traceback_does_not_quote_the_message_twice():
    exc = "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED"
    tb = 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n' + exc
    d = diagnose(exception=exc, traceback=tb)[0]
    assert d.id == "cudnn-init-failed"
    assert sum(exc in e for e in d.evidence) == 1


@pytest.mark.parametrize("text, framework", [
    ("jaxlib.xla_extension.XlaRuntimeError: " + HANDLE.split("] ", 1)[1], "JAX"),
    ("keras " + HANDLE.split("] ", 1)[1], "TensorFlow"),
    ("import torch\n" + HANDLE.split("] ", 1)[1], "PyTorch"),
])
def test_the_framework_comes_from_the_context(text, framework):
    top = diagnose(exception=text)[0]
    assert any(framework in f.title or framework in f.action for f in top.fixes) or framework in top.title \
        or framework in top.summary


# nvidia-cudnn-cu11 starts at 8.5 on PyPI, nvidia-cudnn-cu12 at 8.9; cuDNN 9 wheels pair with CUDA 12 here.
@pytest.mark.parametrize("src, requirement", [
    ("8.9.0", "nvidia-cudnn-cu12<9,>=8.9"), ("8.8.0", "nvidia-cudnn-cu11<9,>=8.8"),
    ("8.5.0", "nvidia-cudnn-cu11<9,>=8.5"), ("8.4.0", None), ("9.1.0", "nvidia-cudnn-cu12<10,>=9.1"), ("7.6.0", None),
])
def test_install_advice_names_the_wheel_of_the_usual_cuda_pairing(src, requirement):
    top = diagnose(log=TF_VERSION.format(rt="8.0.5" if src.startswith("8") else "9.0.0", src=src))[0]
    fix = next(f for f in top.fixes if f.id == "install-matching-cudnn")
    if requirement is None:
        assert "conda install" in fix.action and f"cudnn<{int(src[0]) + 1},>={src[:3]}" in fix.action
        assert fix.applicable is False
    else:
        assert fix.action == f'python -m pip install "{requirement}"'
        assert fix.applicable is True


@pytest.mark.parametrize("log, title, action", [
    # Linux: cuDNN 8 links libz.so.1 (the system zlib), not Windows' zlibwapi.dll
    ("Could not load library libcudnn_cnn_infer.so.8. Error: libz.so.1: cannot open shared object file: No such file "
     "or directory", "Install zlib (libz.so.1), which cuDNN 8 needs", "zlib1g"),
    ("Could not locate zlibwapi.dll. Please make sure it is in your library path!",
     "Install zlibwapi.dll next to the cuDNN DLLs", "zlibwapi.dll"),
    ("Could not load library libcudnn_cnn_infer.so.8. Error: libnvrtc.so: cannot open shared object file: No such file "
     "or directory", "Install NVRTC, which cuDNN's convolution sub-library loads", "nvidia-cuda-nvrtc-cu11"),
])
def test_dependency_advice_per_platform(log, title, action):
    top = diagnose(log=log)[0]
    fix = next(f for f in top.fixes if f.id == "install-cudnn-deps")
    assert fix.title == title
    assert action in fix.action


CANNOT_DLOPEN = ("2023-01-01 W tensorflow/core/common_runtime/gpu/gpu_device.cc:1934] Cannot dlopen some GPU libraries. "
                 "Please make sure the missing libraries mentioned above are installed properly if you would like to "
                 "use GPU.\nSkipping registering GPU devices...")


@pytest.mark.parametrize("log, expected", [
    (CANNOT_DLOPEN, [("cudnn-library-not-found", "TensorFlow could not load its GPU libraries and will run on the CPU")]),
    ("W dso_loader.cc:64] Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared "
     "object file: No such file or directory\n" + CANNOT_DLOPEN,
     [("cudnn-library-not-found", "TensorFlow could not load libcudnn.so.8")]),
    # the missing libraries are named and none is cuDNN: no cuDNN warning
    ("W dso_loader.cc:64] Could not load dynamic library 'libcublasLt.so.12'; dlerror: libcublasLt.so.12: cannot open "
     "shared object file: No such file or directory\n" + CANNOT_DLOPEN, []),
    (HANDLE, []),  # an error line in a succeeding cell is not a GPU-unused warning
    ("", []),
])
def test_gpu_unused_warnings(log, expected):
    assert [(d.id, d.title) for d in gpu_unused_warnings(log)] == expected


# --------------------------------------------------------------------------- gpu_unused_warnings, _build, _versions
# Issue 20, the survivors of gpu_unused_warnings, _build and _versions (tests/mutation_survivors.md).

JAX_BACKEND = ("WARNING:jax._src.xla_bridge:CUDA backend failed to initialize: Unable to load CUDA. Is it installed? "
               "(Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)")
SET_DESCRIPTOR = ("E tensorflow/stream_executor/cuda/cuda_dnn.cc:1000] could not set cudnn tensor descriptor: "
                  "CUDNN_STATUS_BAD_PARAM")


@pytest.mark.parametrize("log, expected", [
    # JAX's "CUDA backend failed to initialize" is a marker of weight 0: it only supports the cuDNN reason printed
    # with it (jax/_src/xla_bridge.py). Without such a reason it makes no warning, not even next to a weaker
    # cuDNN line ("could not set cudnn ... descriptor" is bad-param, and a version mismatch only at 60 < 80).
    (JAX_BACKEND, []),
    (SET_DESCRIPTOR, []),
    (JAX_BACKEND + "\n" + SET_DESCRIPTOR, []),
    # with a decisive cuDNN reason (XLA's cuda_dnn.cc version check) it warns
    (JAX_BACKEND + "\n" + TF_VERSION.format(rt="8.0.5", src="8.1.0"), ["cudnn-version-mismatch"]),
])
def test_gpu_unused_warning_needs_a_positive_warning_or_a_decisive_line(log, expected):
    assert [d.id for d in gpu_unused_warnings(log)] == expected


def test_gpu_unused_warnings_never_raise_and_log_the_failure_at_debug(monkeypatch, caplog):
    import cudnn_magic.engines.diagnose as diag

    def broken(*args, **kwargs):
        raise RuntimeError("scan broke")

    caplog.set_level(logging.DEBUG, logger="cudnn_magic")
    monkeypatch.setattr(diag, "scan", broken)
    assert gpu_unused_warnings(CANNOT_DLOPEN) == []
    failed = [r for r in caplog.records if r.name == "cudnn_magic" and r.getMessage() == "gpu_unused_warnings failed"]
    assert len(failed) == 1
    assert failed[0].levelno == logging.DEBUG
    assert failed[0].exc_info and failed[0].exc_info[0] is RuntimeError  # the traceback is kept for a bug report


def test_a_log_that_is_not_text_gets_no_warning_and_no_failure(caplog):
    # the docstring's contract is a str (a cell's decoded output): bytes are refused up front, not by failing inside
    caplog.set_level(logging.DEBUG, logger="cudnn_magic")
    assert gpu_unused_warnings(CANNOT_DLOPEN.encode()) == []
    assert gpu_unused_warnings(None) == []  # type: ignore[arg-type]
    assert not [r for r in caplog.records if "failed" in r.getMessage()]


WIN_DLL = ('OSError: [WinError 126] The specified module could not be found. Error loading '
           '"C:\\Python\\Lib\\site-packages\\torch\\lib\\cudnn64_8.dll" or one of its dependencies.')


@pytest.mark.parametrize("kw, alternative, quoted", [
    # "could not set cudnn ... descriptor" also speaks for a version mismatch (TF's cuda_dnn.cc, knowledge/status.py)
    ({"log": SET_DESCRIPTOR}, "cudnn-version-mismatch", "could not set cudnn tensor descriptor"),
    # cudnn64_8.dll is the main cuDNN 8 DLL (cuDNN 8 Windows installation guide): the wording's own id
    # (a sub-library or a dependency failed) stays as the alternative, quoting the same line
    ({"exception": WIN_DLL}, "cudnn-sublibrary-load-failed", "cudnn64_8.dll"),
])
def test_an_alternative_diagnosis_quotes_the_line_it_stands_on(kw, alternative, quoted):
    ds = diagnose(**kw)
    alt = next(d for d in ds if d.id == alternative)
    assert ds[0].id != alternative
    assert any(quoted in e for e in alt.evidence)


@pytest.mark.parametrize("kw, ranking", [
    # a refinement moves the hit to another id; the wording's own id stays at least 10 below it, so
    # it never outranks the refined one (88 for the main DLL vs min(90, 88 - 10) for a sub-library)
    ({"exception": WIN_DLL}, ["cudnn-library-not-found", "cudnn-sublibrary-load-failed"]),
    # cudnn-frontend error_code_t names decide the id, ahead of the generic "unsupported" of CUDNN_FE failure
    ({"log": "CUDNN_FE failure 3: HANDLE_ERROR"}, ["cudnn-init-failed", "cudnn-unsupported-config"]),
    ({"log": "CUDNN_FE failure 5: ATTRIBUTE_NOT_SET"}, ["cudnn-bad-param", "cudnn-unsupported-config"]),
])
def test_a_refined_wording_ranks_before_its_own_id(kw, ranking):
    assert [d.id for d in diagnose(**kw)][:2] == ranking


UNDEFINED_SUB = ("Could not load library libcudnn_cnn_train.so.8. Error: /opt/lib/libcudnn_ops_train.so.8: undefined "
                 "symbol: _Z22cudnnGenericOpTensorNdILi2EE13cudnnStatus_tP12cudnnContext, version libcudnn_ops_infer.so.8")
TORCH_SYMBOL = ("ImportError: /usr/lib/python3/dist-packages/torch/lib/libtorch_cuda.so: undefined symbol: "
                "cudnnGetRNNWorkspaceSize, version libcudnn.so.7")
DSO_SYMBOL = ("F tensorflow/stream_executor/cuda/cuda_dnn.cc:221] could not find cudnnGetRNNDescriptor_v6 in cudnn DSO; "
              "dlerror: undefined")


@pytest.mark.parametrize("log, id_, versions", [
    # Windows system error 126 (ERROR_MOD_NOT_FOUND) is kept next to the DLL cuDNN's loader names
    ("Could not load library libcudnn_cnn_infer64_8.dll. Error code 126",
     "cudnn-sublibrary-load-failed", {"library": "libcudnn_cnn_infer64_8.dll", "error_code": "126"}),
    # every field of the line is read, the symbol after the library (cuDNN 8's loader message)
    (UNDEFINED_SUB, "cudnn-sublibrary-load-failed",
     {"library": "libcudnn_cnn_train.so.8",
      "symbol": "_Z22cudnnGenericOpTensorNdILi2EE13cudnnStatus_tP12cudnnContext"}),
    # of two version lines the later one decides (the last attempt is what failed)
    (TF_VERSION.format(rt="8.0.5", src="8.1.0") + "\n" + TF_VERSION.format(rt="8.0.4", src="8.2.0"),
     "cudnn-version-mismatch", {"loaded": "8.0.4", "compiled": "8.2.0"}),
    # a diagnosis's own wording gives its values before a line it only shares ("could not find ... in cudnn DSO"
    # is a missing library first, a version mismatch second)
    (TORCH_SYMBOL + "\n" + DSO_SYMBOL, "cudnn-version-mismatch", {"symbol": "cudnnGetRNNWorkspaceSize"}),
    (TORCH_SYMBOL + "\n" + DSO_SYMBOL, "cudnn-library-not-found", {"symbol": "cudnnGetRNNDescriptor_v6"}),
])
def test_diagnosis_versions_come_from_its_strongest_own_line(log, id_, versions):
    d = next(d for d in diagnose(log=log) if d.id == id_)
    assert d.versions == versions


# The live report's CUDA decides the wheel (fixes/advice.py _cuda_major_for: "known CUDA first, else the usual
# pairing"):
# nvidia-cudnn-cu11 carries 8.9 too (PyPI), and CUDA 10.x has no cuDNN wheel at all (cu11 is the first).
@pytest.mark.parametrize("src, cuda, action", [
    ("8.9.0", "11.8", 'python -m pip install "nvidia-cudnn-cu11<9,>=8.9"'),  # without a report: cu12
    ("8.6.0", "12.2", 'python -m pip install "nvidia-cudnn-cu12<9,>=8.6"'),  # without a report: cu11
    ("8.6.0", "10.2", 'conda install -c conda-forge "cudnn<9,>=8.6"'),
])
def test_install_advice_follows_the_cuda_of_the_live_report(src, cuda, action):
    from cudnn_magic.model import FrameworkBuild, Report

    tf = FrameworkBuild("TensorFlow", "tensorflow", "2.6.0", imported=True, cudnn_compiled=src, cuda_compiled=cuda)
    top = diagnose(log=TF_VERSION.format(rt="8.0.5", src=src), report=Report(frameworks=(tf,)))[0]
    fix = next(f for f in top.fixes if f.id == "install-matching-cudnn")
    assert fix.action.startswith(action)


STREAM = "F tensorflow/stream_executor/cuda/cuda_dnn.cc:100] "


def test_a_printed_status_number_is_not_replaced_by_a_name_from_another_line():
    # two stream failures; the later line printed the number (TF's CHECK "(8 vs. 0)", cuDNN 8 numbering:
    # 8 is EXECUTION_FAILED); the earlier one's name (MAPPING_ERROR, 7 in cuDNN 8 only) does not overwrite it
    log = (STREAM + "failed to set stream for cudnn handle: CUDNN_STATUS_MAPPING_ERROR\n" + STREAM
           + "Check failed: status == CUDNN_STATUS_SUCCESS (8 vs. 0)Failed to set cuDNN stream.")
    top = diagnose(log=log)[0]
    assert top.id == "cudnn-stream-set-failed"
    assert top.versions["status_code"] == "8"


def test_a_status_refined_by_its_call_quotes_the_last_status_line():
    # Caffe creates cuDNN handles in LayerSetUp (knowledge/calls.py, Caffe's cudnn_*_layer.cpp): a bare
    # INTERNAL_ERROR there is a handle that could not be created; of two equal status lines the later one,
    # next to the stack trace that names the call, is quoted
    first = ("F0101 00:00:00.000 cudnn_conv_layer.cpp:53] Check failed: status == CUDNN_STATUS_SUCCESS (4 vs. 0)  "
             "CUDNN_STATUS_INTERNAL_ERROR")
    last = ("F0101 00:00:01.000 cudnn_relu_layer.cpp:20] Check failed: status == CUDNN_STATUS_SUCCESS (4 vs. 0)  "
            "CUDNN_STATUS_INTERNAL_ERROR")
    top = diagnose(log=f"{first}\n{last}\n    @     0x7f caffe::CuDNNReLULayer<>::LayerSetUp()")[0]
    assert top.id == "cudnn-init-failed"
    assert "cudnnCreate" in top.title
    assert top.evidence[0] == last
    assert first not in top.evidence


@pytest.mark.parametrize("log", [CANNOT_DLOPEN + "\n" + SET_DESCRIPTOR, SET_DESCRIPTOR + "\n" + CANNOT_DLOPEN],
                         ids=["dlopen-first", "descriptor-first"])
def test_a_gpu_unused_warning_read_from_the_log_ranks_before_a_mismatch_only_suggested(log):
    # TF skipping its GPU ("Cannot dlopen some GPU libraries", weight 58, a log line: + 2, and its second line
    # "Skipping registering GPU devices": + 1) comes before the version mismatch that "could not set cudnn ...
    # descriptor" only suggests (also 60), whichever line comes first (knowledge/warnings.py, knowledge/status.py)
    assert [d.id for d in gpu_unused_warnings(log)] == ["cudnn-library-not-found", "cudnn-version-mismatch"]
