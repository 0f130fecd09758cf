"""The SCM/NAND hybrid drive: the model (``model``) and its data (``state``), parameters (``params``), the
paper's findings checked (``findings``), jobs (``jobs``) and plots (``plots``)."""
