"""The only code that imports IPython (with the widgets of :mod:`cudnn_magic.ui`): the
extension's load/unload (:mod:`.extension`), one module per magic family, the exception hook
(:mod:`.annotate`), the crash notice at load time, and magic argument parsing."""
