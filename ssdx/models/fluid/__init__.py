"""The fluid pSLC-cache model: the write-stream model (``model``), the fill job (``jobs``), the fill-curve
fit (``fit``, ``fit_model``, ``phases``) and its job (``fit_job``), and the plots (``plots``,
``fit_plots``).  The Drive/Nand/Workload parameters it runs on are shared by every model
(``ssdx.params``)."""
