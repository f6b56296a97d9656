import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))

# Keep every test (and the kernels and child processes it starts) out of the real Jupyter and
# IPython directories and the user's cache: crash records, kernelspec edits, profiles and the
# check's on-disk cache go to a temporary tree.
_ISOLATED = tempfile.mkdtemp(prefix="cudnn-magic-tests-")
for _var, _sub in (("JUPYTER_RUNTIME_DIR", "runtime"), ("JUPYTER_DATA_DIR", "data"),
                   ("JUPYTER_CONFIG_DIR", "config"), ("IPYTHONDIR", "ipython"), ("XDG_CACHE_HOME", "cache")):
    os.environ[_var] = os.path.join(_ISOLATED, _sub)
    os.makedirs(os.environ[_var], exist_ok=True)
