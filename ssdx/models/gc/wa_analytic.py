"""Closed-form write amplification of page-mapped FTLs under uniform random and hot/cold writes.

Notation: spare factor ``S_f = (T − U)/T`` (``T`` physical pages, ``U`` logical pages), ``α = T/U =
1/(1 − S_f)``, ``b`` pages per block, ``x`` the valid fraction of a GC victim; WA = ``1/(1 − x)``
(each cleaned block frees ``(1 − x)·b`` pages for host writes and costs ``x·b`` copies).

**FIFO / LRU cleaning, uniform random writes** (Menon 1995 for log-structured arrays; Desnoyers,
"Analytic modeling of SSD write performance", SYSTOR 2012 and ACM TOS 10(2) 2014; Hu et al., SYSTOR
2009).  A block is cleaned after the frontier has gone once round the drive, i.e. after ``T(1 − x)``
host writes; a page survives them with probability ``(1 − 1/U)^{T(1−x)} → exp(−α(1 − x))``, so::

    x = exp(−α(1 − x))   ⇒   x = −W₀(−α·e^{−α}) / α                                  (Lambert W)

This is also the greedy policy's limit for large ``b`` (Xiang & Kurkoski, "An improved analytical
expression for write amplification in NAND flash", arXiv:1110.4245, 2012: WA 2.36 at
over-provisioning 0.3, simulated greedy 2.35).

**Greedy, finite b** — the mean-field limit (many blocks) in the framework of Van Houdt, "A mean field
model for a class of garbage collection algorithms in flash-based SSDs", SIGMETRICS 2013.  Per host
write one valid page chosen uniformly among the ``U`` is invalidated, so a block with ``j`` valid
pages drops to ``j − 1`` at rate ``j·n_j/U`` (``n_j`` blocks hold ``j`` valid pages).  New blocks enter
full (``j = b``) once per ``b − k`` host writes (``k`` the mean copies per cleaning).  Greedy takes
victims from the lowest occupied level, so in steady state the flow ``1/(b − k)`` passes every level
above ``k``: ``n_j = U/(j(b − k))`` for ``j > k``, and the level just above a fractional ``k`` is
partly drained.  Counting blocks, ``Σ n_j = T/b``, gives the fixed point::

    α·(b − k)/b = H_b − H(k),    WA = b/(b − k)

with ``H_j`` the harmonic numbers and ``H(k)`` their piecewise-linear interpolation (``H(k) = H_m +
(k − m)/(m + 1)`` for ``m = ⌊k⌋``).  As ``b → ∞``, ``H_b − H(k) → −ln(k/b)`` and the FIFO equation above
returns: greedy's advantage over FIFO shrinks with block size.

**Hot/cold, FIFO** (the LRU hot/cold analysis of Desnoyers 2014): a fraction ``f`` of the logical
pages takes a fraction ``r`` of the writes, both in one write stream.  In one rotation of the log the
frontier writes ``T`` pages, ``(1 − x)T`` of them host pages; a page of class ``c`` (write share
``r_c``, space share ``f_c``) survives a rotation of ``L = T(1 − x)`` host writes with probability
``s_c = exp(−α(1 − x)·r_c/f_c)``, and survivors are copied back to the head.  The share ``φ_c`` of log
slots holding class ``c`` balances host writes plus copies: ``φ_c = r_c(1 − x) + φ_c s_c``; the shares
add up to one, so with ``y = α(1 − x)``::

    (y/α)·[ r/(1 − e^{−y·r/f}) + (1 − r)/(1 − e^{−y(1−r)/(1−f)}) ] = 1,     WA = α/y

which for ``r = f`` is the uniform equation above.  (A victim's mix is not the host's ``r : 1 − r``:
cold pages keep coming back, which is why FIFO suffers from skew.)

**TRIM and compression** act through the utilisation (Frankie, Hughes & Kreutz-Delgado, "SSD TRIM
commands considerably improve over-provisioning", 2012): a trimmed fraction ``t`` and a
compressibility ``c`` (NAND bytes per host byte) leave ``U' = c(1 − t)U`` pages of data, so the
effective ``α' = T/U'``; NAND writes per host write are ``c·WA(α')``.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq
from scipy.special import lambertw


def alpha(spare_factor: float) -> float:
    """``T/U`` from the spare factor ``(T − U)/T``."""
    if not 0.0 < spare_factor < 1.0:
        raise ValueError(f"spare_factor must lie in (0, 1), got {spare_factor}")
    return 1.0 / (1.0 - spare_factor)


def effective_spare(spare_factor: float, trim_fraction: float = 0.0, compressibility: float = 1.0) -> float:
    """Spare factor seen by GC when ``trim_fraction`` of the logical space is trimmed and the data
    shrink to ``compressibility`` of their size (module docstring)."""
    return 1.0 - compressibility * (1.0 - trim_fraction) * (1.0 - spare_factor)


def fifo_victim_valid(spare_factor: float) -> float:
    """Valid fraction ``x`` of a FIFO victim under uniform random writes (Lambert W, principal branch)."""
    a = alpha(spare_factor)
    return float(np.real(-lambertw(-a * np.exp(-a), 0)) / a)


def fifo_wa(spare_factor: float) -> float:
    """FIFO/LRU write amplification under uniform random writes (module docstring)."""
    return 1.0 / (1.0 - fifo_victim_valid(spare_factor))


def _harmonic(k: float) -> float:
    """Piecewise-linear interpolation of the harmonic numbers, ``H(0) = 0``."""
    m = int(np.floor(k))
    h = float(np.sum(1.0 / np.arange(1, m + 1)))
    return h + (k - m) / (m + 1)


def greedy_wa(spare_factor: float, pages_per_block: int) -> float:
    """Greedy write amplification under uniform random writes, mean-field fixed point (docstring)."""
    a, b = alpha(spare_factor), int(pages_per_block)
    if b < 2:
        raise ValueError(f"pages_per_block must be >= 2, got {b}")
    hb = _harmonic(b)

    def gap(k: float) -> float:  # decreasing in k on [0, b)
        return hb - _harmonic(k) - a * (b - k) / b

    if gap(0.0) <= 0.0:  # even an empty victim balances: no copies
        return 1.0
    k = brentq(gap, 0.0, b - 1e-9, xtol=1e-12)
    return b / (b - k)


def hot_cold_fifo_wa(spare_factor: float, hot_fraction: float, hot_share: float) -> float:
    """FIFO write amplification with hot/cold writes in one stream (module docstring)."""
    a, f, r = alpha(spare_factor), hot_fraction, hot_share
    if not (0.0 < f < 1.0 and 0.0 <= r <= 1.0):
        raise ValueError(f"need 0 < hot_fraction < 1 and 0 <= hot_share <= 1, got {f}, {r}")

    def share(w: float, space: float, y: float) -> float:  # w / (1 - exp(-y·w/space)); space/y at w = 0
        z = y * w / space
        return space / y if z == 0.0 else w / -np.expm1(-z)

    def gap(y: float) -> float:  # < 0 as y -> 0, > 0 at y = alpha
        return y / a * (share(r, f, y) + share(1.0 - r, 1.0 - f, y)) - 1.0

    y = brentq(gap, 1e-12, a, xtol=1e-14)
    return a / y
