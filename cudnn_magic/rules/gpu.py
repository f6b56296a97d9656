"""GPU and driver rules: the minimum NVIDIA driver for a CUDA major (Linux, Windows), driver
version comparison, and the compute capabilities a cuDNN release supports. Pure."""

from __future__ import annotations

import re

from .cudnn_version import CudnnVersion

# Minimum Linux driver for each CUDA major (NVIDIA CUDA minor-version compatibility page).
CUDA_DRIVER_FLOOR_LINUX: dict[int, str] = {13: "580", 12: "525.60.13", 11: "450.80.02"}


CUDA_DRIVER_FLOOR_WINDOWS: dict[int, str] = {12: "527.41", 11: "452.39"}


def driver_floor(cuda_version: str | None, windows: bool = False) -> str | None:
    """Minimum driver for a CUDA runtime ``"12.5"`` (or None when unknown)."""
    if not cuda_version:
        return None
    try:
        major = int(str(cuda_version).split(".")[0])
    except ValueError:
        return None
    table = CUDA_DRIVER_FLOOR_WINDOWS if windows else CUDA_DRIVER_FLOOR_LINUX
    return table.get(major)


def driver_at_least(driver: str, floor: str) -> bool | None:
    """Compare NVIDIA driver versions numerically ("550.54.15" >= "525.60.13")."""
    def nums(s: str) -> tuple[int, ...] | None:
        parts = re.findall(r"\d+", s)
        return tuple(int(p) for p in parts) if parts else None

    a, b = nums(driver), nums(floor)
    if a is None or b is None:
        return None
    return a >= b


def cudnn_compute_capability_range(cudnn: CudnnVersion) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """Supported compute capabilities (min, max) of a cuDNN release, per the cuDNN support
    matrix: 9.11 and later 7.5-12.x (PyTorch refuses < 7.5 from 9.11); 9.0-9.10 5.0-12.0;
    8.9 5.0-9.0. None when unknown."""
    if cudnn.major >= 9 and cudnn.minor is not None:
        if cudnn.minor >= 11:
            return (7, 5), (12, 1)
        return (5, 0), (12, 0)
    if cudnn.major == 8 and cudnn.minor is not None and cudnn.minor >= 9:
        return (5, 0), (9, 0)
    return None
