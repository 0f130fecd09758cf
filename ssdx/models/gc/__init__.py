"""Garbage collection and write amplification: the page-mapped FTL (``model``), the closed forms
(``wa_analytic``), parameters (``params``), jobs (``jobs``) and plots (``plots``)."""
