"""A framework's pinned distribution names are read without packaging's requirement parser (its
marker grammar and platform tags cost about 30 ms of a check's start-up); the name must be what
``packaging.requirements.Requirement(pin).name`` gives, canonicalised as ``packaging.utils`` does."""

from __future__ import annotations

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from cudnn_magic.engines.overwrites import canonical_name, pinned_names
from cudnn_magic.model import FrameworkBuild

# Requires-Dist lines as published: TensorFlow 2.21.0 [and-cuda], torch 2.14.1, jax[cuda12] and
# onnxruntime-gpu wheels' METADATA, and PEP 508's own forms (extras, parenthesised specifiers, URLs).
PINS = [
    'nvidia-cudnn-cu12<10.0,>=9.3.0.75; extra == "and-cuda"',
    'nvidia-cudnn-cu13==9.24.0.43; platform_system == "Linux"',
    'cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx]==13.0.3; '
    'platform_system == "Linux"',
    'tensorflow-io-gcs-filesystem>=0.23.1; (sys_platform != "win32" and python_version < "3.13") and '
    'extra == "gcs-filesystem"',
    "pyyaml; extra == \"pyyaml\"",
    "jax-cuda12-plugin[with-cuda]<=0.7.2,>=0.7.2; extra == \"cuda12\"",
    "nvidia-cudnn-cu12 (>=9.1,<10.0)",
    "Nvidia_CuDNN.cu12>=9",
    "  torch",
    "flatbuffers",
    "numpy>=1.21.6",
    "pip @ https://github.com/pypa/pip/archive/1.3.1.zip#sha1=da9234ee9982d4bbb3c72346a6de940a148ea686",
    "name[quux, strange];python_version<'2.7' and platform_version=='2'",
    "A",
    "a.b-c_d~=1.0",
]


@pytest.mark.parametrize("pin", PINS)
def test_a_pin_name_is_what_packaging_reads(pin):
    fw = FrameworkBuild("X", "x", "1", pins=(pin,))
    assert pinned_names(fw) == {canonicalize_name(Requirement(pin).name)}


def test_every_pin_of_a_framework_and_canonical_names():
    fw = FrameworkBuild("X", "x", "1", pins=tuple(PINS))
    assert pinned_names(fw) == {canonicalize_name(Requirement(p).name) for p in PINS}
    for name in ("Nvidia_CuDNN.cu12", "nvidia--cudnn__cu12", "TORCH", "a.b"):
        assert canonical_name(name) == canonicalize_name(name)


def test_a_pin_that_does_not_start_with_a_name_is_left_out():
    assert pinned_names(FrameworkBuild("X", "x", "1", pins=(">=1.0", "", "-dash-first", "; extra == 'a'"))) == set()


def test_reading_pin_names_does_not_import_packaging_requirement_parser():
    """What the change is for: a check whose frameworks are all fine never imports
    ``packaging.requirements`` (its marker grammar and platform tags)."""
    import subprocess
    import sys

    code = ("import sys; from cudnn_magic.engines.overwrites import pinned_names; "
            "from cudnn_magic.model import FrameworkBuild; "
            "print(sorted(pinned_names(FrameworkBuild('X', 'x', '1', pins=('nvidia-cudnn-cu12>=9; extra == \"a\"',))))); "
            "print('packaging.requirements' in sys.modules, 'packaging.markers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "['nvidia-cudnn-cu12']" and out[1] == "False False"
