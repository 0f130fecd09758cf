"""The request-level engine: the batched step (``model``) with its data (``state``) and die booking
(``book``), the per-configuration loops (``cpu``, ``cuda``) and the back-end choice (``backends``),
parameters (``params``), chunked replay (``replay``), jobs (``jobs``, ``mqsim_job``) and plots
(``plots``)."""
