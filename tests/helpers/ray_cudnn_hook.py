"""A Ray ``worker_process_setup_hook`` for tests/cluster/test_ray_cluster.py: what a job's workers do when
they import a framework at start: load ``libcudnn.so.9`` by its soname (the loader searches
``LD_LIBRARY_PATH``), as TensorFlow and JAX do. A worker with no cuDNN on its search path loads
none (the failure is what a framework would log, and is ignored here)."""

import ctypes


def load_by_soname() -> None:
    try:
        ctypes.CDLL("libcudnn.so.9", mode=ctypes.RTLD_GLOBAL)
    except OSError:
        pass


def slow() -> None:
    """A worker that takes 8 s to start (a heavy framework import): the node can die meanwhile."""
    import time

    time.sleep(8)
