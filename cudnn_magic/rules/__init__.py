"""Pure rules (no IPython, no ctypes, no probing): cuDNN version encodings
(:mod:`.cudnn_version`), each framework's compatibility rule (:mod:`.compat`), build tables
(:mod:`.build_tables`), driver floors and compute capability (:mod:`.gpu`), the cuDNN requirement
of a build (:mod:`.requirement`), and the rules for cuDNN consumers beyond the five frameworks
(:mod:`.consumers`)."""
