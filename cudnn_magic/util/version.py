"""The package's version (the same as ``pyproject.toml``'s), for every module that reports it:
``cudnn_magic.__version__``, ``cudnn-magic --version``, a manifest's ``created_by``, a cluster
worker's answer."""

__version__ = "0.1.0"
