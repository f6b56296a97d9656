"""The engines: they run the probes, rules and knowledge and return the result types of
:mod:`cudnn_magic.model`. No IPython, no argv, no widgets.
"""
