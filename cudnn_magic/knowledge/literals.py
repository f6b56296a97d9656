"""The literals the "GPU silently unused" warnings hinge on, as data apart from the matcher: the
fd-2 capture helper (:mod:`cudnn_magic.capture.helper`) is told them at start and flags each chunk
that holds one, so a succeeding cell whose output holds none is not read back at all
(``benchmarks/bench_cell_overhead.py``). :func:`cudnn_magic.knowledge.matcher.keyword_lines` uses
the same tuple."""

from __future__ import annotations

#: Lower-case literals one of which every line that can raise a "GPU silently unused" warning
#: holds (``gpu_unused_warnings``): cuDNN's own name, TensorFlow's "Could not load dynamic
#: library", "Cannot dlopen some GPU libraries", "Skipping registering GPU devices" and
#: "Ignoring visible gpu device", JAX's "a CUDA-enabled jaxlib is not installed" and "CUDA
#: backend failed to initialize", ONNX Runtime's "Failed to create CUDAExecutionProvider",
#: cuDNN 8's "Could not locate zlibwapi.dll". Long, specific literals: each is one fast pass
#: and matches few ordinary lines. A line that also holds the keyword of a signature reading
#: fields from the lines after its own (``window``: JAX's "Outdated cuDNN installation found"
#: then "Installed version: 8600") keeps those lines. ``tests/unit/knowledge/test_warning_prefilter.py`` checks
#: that every wording of the knowledge tables and the corpus gets the same warnings through
#: :func:`keyword_lines` as over the whole text.
WARNING_LITERALS: tuple[bytes, ...] = (
    b"cudnn", b"load dynamic librar", b"gpu librar", b"gpu device", b"cudaexecutionprovider", b"cuda backend",
    b"jaxlib", b"zlibwapi",
)
