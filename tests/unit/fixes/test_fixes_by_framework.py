"""Fixes follow the framework that raised: a PyTorch out-of-memory error once got
TensorFlow's memory-growth snippet and ``restart-kernel`` "(the CUDA context cannot recover)",
although PyTorch recovers from it in the same kernel; a PyTorch ``CUDNN_STATUS_NOT_INITIALIZED``
put ``allow-memory-growth`` first. Each row is a real report's wording (source given); the
traceback rows keep the frames the report shows.

Rows: (exception, traceback, framework that raised, fix ids that must be offered, fix ids that
must not be, source).
"""

from __future__ import annotations

import pytest

from cudnn_magic.engines.diagnose import diagnose
from cudnn_magic.fixes.frameworks import in_play, raising_framework
from cudnn_magic.model import Report
from cudnn_magic.model.report import FrameworkBuild

_TORCH_CONV_FRAMES = (
    'Traceback (most recent call last):\n'
    '  File "/home/zeus/miniconda3/envs/cloudspace/lib/python3.12/site-packages/torch/nn/modules/module.py", '
    'line 1786, in _call_impl\n    return forward_call(*args, **kwargs)\n'
    '  File "/teamspace/studios/this_studio/ComfyUI/comfy/ops.py", line 226, in forward\n'
    '    return super().forward(*args, **kwargs)\n'
    '  File "/home/zeus/miniconda3/envs/cloudspace/lib/python3.12/site-packages/torch/nn/modules/conv.py", '
    'line 712, in _conv_forward\n    return F.conv3d(\n')

ROWS = [
    # PyTorch >= 2.5: the qualified type on the traceback's last line
    ("OutOfMemoryError: CUDA out of memory. Tried to allocate 29.76 GiB. GPU 0 has a total capacity of 10.74 GiB "
     "of which 3.69 GiB is free. Including non-PyTorch memory, this process has 6.68 GiB memory in use.",
     "Traceback (most recent call last):\n  File \"demo_gradio.py\", line 1, in worker\n"
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 29.76 GiB.",
     "PyTorch", {"free-gpu-memory"}, {"allow-memory-growth", "restart-kernel"},
     "https://github.com/lllyasviel/FramePack/issues/369"),
    # PyTorch 2.0-2.4: torch.cuda.OutOfMemoryError, no traceback (a pasted message)
    ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.70 GiB. GPU 0 has a total capacty of "
     "6.00 GiB of which 0 bytes is free. Of the allocated memory 2.93 GiB is allocated by PyTorch, and 2.30 GiB is "
     "reserved by PyTorch but unallocated.", "",
     "PyTorch", {"free-gpu-memory"}, {"allow-memory-growth", "restart-kernel"},
     "https://github.com/carolchenyx/MGFN./issues/35"),
    # PyTorch <= 1.12: a RuntimeError whose frames are torch's
    ("RuntimeError: CUDA out of memory. Tried to allocate 1024.00 MiB (GPU 0; 15.90 GiB total capacity; 14.25 GiB "
     "already allocated; 991.56 MiB free; 607.00 KiB cached)",
     "  File \"/private/home/roller/.conda/envs/retry-20190211/lib/python3.7/site-packages/torch/nn/functional.py\", "
     "line 840, in threshold\n    result = _VF.threshold(input, threshold, value)\n",
     "PyTorch", {"free-gpu-memory"}, {"allow-memory-growth", "restart-kernel"},
     "https://github.com/pytorch/pytorch/issues/18853"),
    # Keras 3 on the torch backend: Keras frames, PyTorch's words
    ("OutOfMemoryError: Exception encountered when calling Softmax.call().\n\nCUDA out of memory. Tried to allocate "
     "1.53 GiB. GPU 0 has a total capacity of 14.56 GiB of which 155.81 MiB is free. Including non-PyTorch memory, "
     "this process has 14.41 GiB memory in use.",
     "  File \"/usr/local/lib/python3.11/dist-packages/keras/src/trainers/compile_utils.py\", line 691, in __call__\n"
     "    return self.call(y_true, y_pred, sample_weight)\n",
     "PyTorch", {"free-gpu-memory"}, {"allow-memory-growth", "restart-kernel"},
     "https://github.com/keras-team/keras/issues/22339"),
    # PyTorch's cuDNN handle: NOT_INITIALIZED with torch frames: no TensorFlow/JAX memory growth
    ("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED", _TORCH_CONV_FRAMES + "RuntimeError: cuDNN error: "
     "CUDNN_STATUS_NOT_INITIALIZED\n",
     "PyTorch", {"install-matching-cudnn"}, {"allow-memory-growth"},
     "https://github.com/Comfy-Org/ComfyUI/issues/11723"),
    ("RuntimeError: CUDNN_STATUS_NOT_INITIALIZED",
     "  File \"/home/schirrmr/.local/lib/python3.5/site-packages/torch/nn/functional.py\", line 39, in conv2d\n"
     "    return f(input, weight, bias)\nRuntimeError: CUDNN_STATUS_NOT_INITIALIZED\n",
     "PyTorch", set(), {"allow-memory-growth"},
     "https://github.com/pytorch/pytorch/issues/1171"),
    # TensorFlow out of memory (an IPython traceback): its own fix, and a restart that gives back what it reserved
    ("ResourceExhaustedError: 2 root error(s) found.\n  (0) Resource exhausted: OOM when allocating tensor with "
     "shape[16,112,112,147] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
     "/anaconda/envs/py36/lib/python3.6/site-packages/tensorflow/python/client/session.py in "
     "_call_tf_sessionrun(self, options, feed_dict, fetch_list, target_list, run_metadata)\n"
     "   1428         self._session, options, feed_dict, fetch_list, target_list,\n-> 1429         run_metadata)\n",
     "TensorFlow", {"allow-memory-growth", "free-gpu-memory", "restart-kernel"}, set(),
     "https://github.com/Azure/MachineLearningNotebooks/issues/880"),
    # JAX: XLA's error type; its own preallocation switch, no PyTorch fallback
    ("XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 6291456 bytes.",
     '  File "/home/gccrcv/anaconda3/envs/multinerf/lib/python3.9/site-packages/jax/_src/dispatch.py", line 895, '
     'in _execute_compiled\n    out_flat = compiled.execute(in_flat)\n'
     "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 6291456 bytes.\n",
     "JAX", {"allow-memory-growth"}, set(),
     "https://github.com/jax-ml/jax/issues/13428"),
]


def _ids(diags) -> list[str]:
    return [f.id for f in diags[0].fixes] if diags else []


@pytest.mark.parametrize("exc,tb,framework,offered,not_offered,source", ROWS, ids=[r[5] for r in ROWS])
def test_fixes_follow_the_framework_that_raised(exc, tb, framework, offered, not_offered, source):
    assert raising_framework(exc, tb, "") == framework
    diags = diagnose(exception=exc, traceback=tb)
    assert diags, source
    ids = _ids(diags)
    assert offered <= set(ids), (source, ids)
    assert not (not_offered & set(ids)), (source, ids)
    for f in diags[0].fixes:  # no fix's words are another framework's snippet
        if framework == "PyTorch":
            assert "TF_FORCE_GPU_ALLOW_GROWTH" not in f.action and "XLA_PYTHON" not in f.action, (source, f)
        if framework == "JAX":
            assert "torch.backends" not in f.action and "TF_FORCE" not in f.action, (source, f)


def test_a_pytorch_out_of_memory_error_is_freed_in_the_same_kernel():
    exc, tb = ROWS[0][0], ROWS[0][1]
    fix = diagnose(exception=exc, traceback=tb)[0].fixes[0]
    assert fix.id == "free-gpu-memory" and not fix.restart_required
    assert "torch.cuda.empty_cache()" in fix.action and "PyTorch recovers" in fix.action
    assert "restart" not in fix.action.lower()


def test_tensorflow_out_of_memory_restart_says_why():
    exc, tb = ROWS[6][0], ROWS[6][1]
    restart = [f for f in diagnose(exception=exc, traceback=tb)[0].fixes if f.id == "restart-kernel"]
    assert restart and "cannot recover" not in restart[0].action
    assert "reserved until the process ends" in restart[0].action


def _report(*names: str) -> Report:
    dist = {"PyTorch": "torch", "TensorFlow": "tensorflow", "JAX": "jax", "ONNX Runtime": "onnxruntime-gpu"}
    return Report(frameworks=tuple(FrameworkBuild(n, dist[n], "1.0") for n in names))


def test_a_message_that_names_no_framework_is_judged_by_what_is_installed():
    """``CUDNN_STATUS_NOT_INITIALIZED`` alone: with PyTorch the only framework installed, no
    TensorFlow/JAX fix; with TensorFlow installed, memory growth; with no facts, every fix may fit
    (``cudnn-magic explain`` of a bare line)."""
    exc = "CUDNN_STATUS_NOT_INITIALIZED"
    assert raising_framework(exc, "", "") == ""
    assert "allow-memory-growth" in _ids(diagnose(exception=exc))
    assert "allow-memory-growth" not in _ids(diagnose(exception=exc, report=_report("PyTorch")))
    assert "allow-memory-growth" not in _ids(diagnose(exception=exc, report=_report("ONNX Runtime")))
    assert "allow-memory-growth" in _ids(diagnose(exception=exc, report=_report("PyTorch", "TensorFlow")))


def test_autotuning_is_turned_off_in_the_words_of_the_framework():
    internal = "CUDNN_STATUS_INTERNAL_ERROR"
    by = {}
    for name, report in (("none", None), ("PyTorch", _report("PyTorch")), ("TensorFlow", _report("TensorFlow")),
                         ("JAX", _report("JAX"))):
        fixes = {f.id: f for f in diagnose(exception=internal, report=report)[0].fixes}
        by[name] = fixes["disable-cudnn-benchmark"].action if "disable-cudnn-benchmark" in fixes else ""
    assert by["PyTorch"] == "torch.backends.cudnn.benchmark = False"
    assert "TF_CUDNN_USE_AUTOTUNE" in by["TensorFlow"] and "torch" not in by["TensorFlow"]
    assert "--xla_gpu_autotune_level=0" in by["JAX"] and "torch" not in by["JAX"]
    assert all(w in by["none"] for w in ("torch.backends", "TF_CUDNN_USE_AUTOTUNE", "xla_gpu_autotune_level"))


@pytest.mark.parametrize("framework,report,expected", [
    ("PyTorch", None, {"PyTorch"}),
    ("TensorFlow/JAX (XLA)", None, {"TensorFlow", "JAX"}),
    ("", None, None),
    ("", Report(), None),
    ("", "torch+ort", {"PyTorch"}),
])
def test_in_play(framework, report, expected):
    if report == "torch+ort":
        report = _report("PyTorch", "ONNX Runtime")
    got = in_play(framework, report)
    assert (got if got is None else set(got)) == expected


@pytest.mark.parametrize("tb,expected", [
    ('  File "/x/site-packages/keras/src/backend/jax/nn.py", line 1, in conv\n', "JAX"),
    ('  File "/x/site-packages/keras/src/backend/torch/nn.py", line 1, in conv\n', "PyTorch"),
    ('  File "/x/site-packages/keras/src/layers/core.py", line 1, in call\n', "TensorFlow"),
    ('  File "/x/site-packages/tensorflow/python/eager/execute.py", line 53\n'
     '  File "/x/site-packages/torch/nn/modules/conv.py", line 1\n', "PyTorch"),  # the innermost frame decides
    ('  File "C:\\\\env\\\\lib\\\\site-packages\\\\jax\\\\_src\\\\dispatch.py", line 1\n', "JAX"),
])
def test_the_innermost_framework_frame_decides(tb, expected):
    assert raising_framework("RuntimeError: x", tb, "") == expected
