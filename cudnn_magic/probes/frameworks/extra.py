"""The registry of the probes for cuDNN consumers beyond TensorFlow, PyTorch, JAX, CuPy and ONNX
Runtime: CTranslate2, PaddlePaddle, MXNet, TensorRT and the libraries cuda-pathfinder loads for,
one module each, named by the consumer table (:func:`cudnn_magic.rules.consumer_table.consumer_probes`).

Each probe reads plain files only (``*.dist-info`` metadata, a ``version.py`` parsed with
:mod:`ast`, the ELF dynamic sections found by :mod:`cudnn_magic.probes.frameworks.generic`) and returns
:class:`~cudnn_magic.probes.frameworks.consumer_facts.ConsumerFacts`: the unjudged row and how
the framework asks for cuDNN (:class:`~cudnn_magic.probes.frameworks.consumer_facts.CudnnRequest`);
the helpers they share are :mod:`cudnn_magic.probes.frameworks.consumer_facts`.
:mod:`cudnn_magic.engines.consumer_check` resolves the requests and judges the rows by each
framework's own rule (:mod:`cudnn_magic.rules.consumers`). Probes never raise and
never import the framework (``import_frameworks`` only marks it imported when it already is).
"""

from __future__ import annotations

import functools
import importlib

from ...rules.consumer_table import consumer_probes
from ..loader import interpreter_loaders
from .consumer_facts import ConsumerFacts
from .generic import EnvironmentScan

__all__ = ["probe_extra_frameworks"]


def probe_extra_frameworks(scan: EnvironmentScan, paths: list[str] | None = None, *,
                           top: list[str] | None = None, environ: dict[str, str] | None = None
                           ) -> tuple[list[ConsumerFacts], list[str]]:
    """Run every probe of this package. ``top``: the loaders above a Python extension module
    (default :func:`~cudnn_magic.probes.loader.interpreter_loaders`); ``environ``: the start
    environment (Paddle reads ``FLAGS_cudnn_dir`` from it). Returns (facts, notes). Never raises."""
    top = interpreter_loaders() if top is None else top
    facts: list[ConsumerFacts] = []
    notes: list[str] = []
    for entry in consumer_probes():  # the consumer table: one entry per consumer, its probe by name
        label = entry.name
        mod, fn = entry.probe.split(":")
        try:
            probe = getattr(importlib.import_module(f".{mod}", __package__), fn)
            if mod == "paddle":  # Paddle reads FLAGS_cudnn_dir from the start environment
                probe = functools.partial(probe, environ=environ)
        except (ImportError, AttributeError) as exc:
            notes.append(f"{label}: probe {entry.probe} not found: {exc}")
            continue
        try:
            facts.extend(probe(scan, paths, top, notes))
        except Exception as exc:  # noqa: BLE001 - a probe never raises into the cell
            notes.append(f"{label}: probe failed: {type(exc).__name__}: {exc}")
    return facts, notes
