"""Plots and tables of the jobs' results.

Figures are made with :func:`subplots`, a :class:`matplotlib.figure.Figure` of their own rather than
``matplotlib.pyplot``'s: no backend is switched and nothing joins pyplot's global figure list, so
saving a plot from a job leaves a notebook's inline backend (and any other pyplot state) alone, and
plots can be drawn from worker threads.
"""

from __future__ import annotations

from typing import Any


def subplots(
    *args: Any, figsize: tuple[float, float] | None = None, layout: str | None = None, **kwargs: Any
) -> tuple[Any, Any]:
    """``matplotlib.pyplot.subplots`` without pyplot: ``(figure, axes)`` of a new standalone figure
    (``figsize`` in inches; ``layout`` e.g. ``"constrained"``); the other arguments go to
    :meth:`matplotlib.figure.Figure.subplots`.  Save it with ``fig.savefig(path)``; nothing to close."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout=layout)
    return fig, fig.subplots(*args, **kwargs)
