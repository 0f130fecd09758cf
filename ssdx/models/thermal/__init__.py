"""Thermal dynamics and NVMe thermal management: power (``power``), the RC network (``rc``), HCTM
(``hctm``), the coupled scan (``coupled``), their parameters (``params``), the TMT optimiser (``tmt``),
the RC fit (``fit_rc``), nvme-cli and smart-log I/O (``nvme``), the jobs (``jobs``) and plots
(``plots``)."""
