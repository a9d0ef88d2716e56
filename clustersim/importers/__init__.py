"""Start from what users already have: other tools' files as scenarios, and their training logs as checks.

``clustersim scenario from-hf`` (:mod:`clustersim.importers.hf`), ``from-megatron``
(:mod:`~clustersim.importers.megatron`), ``from-torchtitan`` (:mod:`~clustersim.importers.torchtitan`) and
``from-torch`` (:mod:`~clustersim.importers.torch_trace`) write scenarios through
:mod:`~clustersim.importers.build`; ``clustersim compare`` reads logs (:mod:`~clustersim.importers.logs`)
and sets them beside the prediction (:mod:`~clustersim.importers.compare`). Every file is read by
:func:`clustersim.config.input_text.read_input_text`. See ``docs/inputs.md``.
"""
