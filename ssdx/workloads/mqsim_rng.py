"""MQSim's random number generator, to reproduce the draws its preconditioning makes.

MQSim (Tavakkol et al., USENIX FAST 2018) seeds ``Utils::RandomGenerator`` with an integer and draws from
``Utils::CMRRandomGenerator``, a combined multiple recursive generator with L'Ecuyer's MRG32k3a
coefficients (L'Ecuyer, "Good Parameters and Implementations for Combined Multiple Recursive Random Number
Generators", Operations Research 47(1), 1999), advanced from the all-ones state by ``n = seed / 200 + 1``
steps after squaring its transition matrices ``e = seed mod 200`` times.  This is that arithmetic in
Python: 64-bit signed products that wrap as the C++ code's do on two's-complement machines (the squaring
overflows for most seeds) and C's truncating ``%``, so the draws are MQSim's bit for bit.

Used for one draw only: the step with which MQSim's preconditioning walks the addresses it brings into
its mapping cache (``FTL::Perform_precondition``, :func:`cmt_step`).
"""

from __future__ import annotations

_M1, _M2 = 4294967087, 4294944443
_A12, _A13, _A21, _A23 = 1403580.0, -810728.0, 527612.0, -1370589.0
_NORM = 2.328306549295728e-10
#: the two components' transition matrices, as MQSim's ``CMRRandomGenerator::a`` (doubles)
_A = (((0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (_A13, _A12, 0.0)),
      ((0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (_A23, 0.0, _A21)))


def _wrap(x: int) -> int:
    """``x`` as a C ``int64_t`` (two's-complement wrap)."""
    return (x + (1 << 63)) % (1 << 64) - (1 << 63)


def _cmod(a: int, m: int) -> int:
    """C's ``a % m`` for int64 operands (the remainder takes the dividend's sign)."""
    r = abs(a) % abs(m)
    return -r if a < 0 else r


def _ftoi(x: float, m: float) -> int:
    return int(x) if x >= 0.0 else int(x + m)


def _mm_mul(a, b, m: int):
    d = [[0] * 3 for _ in range(3)]
    for i in range(3):
        for j in range(3):
            for k in range(3):
                d[i][j] = _cmod(_wrap(_wrap(a[i][k] * b[k][j]) + d[i][j]), m)
    return d


def _mv_mul(a, u, m: int):
    w = [0, 0, 0]
    for i in range(3):
        for j in range(3):
            w[i] = _cmod(_wrap(_wrap(a[i][j] * u[j]) + w[i]), m)
    return w


def _cmod_f(x: float, m: float) -> float:
    """MQSim's ``CMRRandomGenerator::mod`` on doubles."""
    k = int(x / m)
    x -= float(k) * m
    return x + m if x < 0.0 else x


class MQSimRandom:
    """``Utils::RandomGenerator(seed)`` of MQSim: :meth:`next_double`, :meth:`uniform`,
    :meth:`uniform_uint`."""

    def __init__(self, seed: int):
        n, e = int(seed) // 200 + 1, int(seed) % 200  # C++ int division (MQSim's seeds are positive)
        ms = (_M1, _M2)
        b = [[[_ftoi(_A[i][r][c], ms[i]) for c in range(3)] for r in range(3)] for i in range(2)]
        s = [[1, 1, 1], [1, 1, 1]]
        for _ in range(e):
            b = [_mm_mul(b[i], b[i], ms[i]) for i in range(2)]
        while n != 0:
            if n & 1:
                s = [_mv_mul(b[i], s[i], ms[i]) for i in range(2)]
            n >>= 1
            if n != 0:
                b = [_mm_mul(b[i], b[i], ms[i]) for i in range(2)]
        self.s = [[float(v) for v in row] for row in s]

    def next_double(self) -> float:
        """``CMRRandomGenerator::NextDouble``: the next draw in (0, 1)."""
        s0, s1 = self.s
        p1 = _cmod_f(_A12 * s0[1] + _A13 * s0[0], float(_M1))
        s0[0], s0[1], s0[2] = s0[1], s0[2], p1
        p2 = _cmod_f(_A21 * s1[2] + _A23 * s1[0], float(_M2))
        s1[0], s1[1], s1[2] = s1[1], s1[2], p2
        p = p1 - p2
        if p < 0.0:
            p += _M1
        return (p + 1.0) * _NORM

    def uniform(self, a: float, b: float) -> float:
        """``RandomGenerator::Uniform``."""
        return a + (b - a) * self.next_double()

    def uniform_uint(self, m: int, n: int) -> int:
        """``RandomGenerator::Uniform_uint``: an integer in ``[m, n]`` (uint32 arithmetic)."""
        m, n = m % (1 << 32), n % (1 << 32)
        return (m + int((n - m + 1.0) * self.next_double())) % (1 << 32)


def cmt_step(seed: int, lpas: int, cmt_entries: int) -> int:
    """The step with which MQSim's preconditioning walks the ``lpas`` addresses it prepared for a flow of
    uniformly random addresses (ordered as the flow will first touch them), bringing every step-th (from
    the first) into its mapping cache of ``cmt_entries`` entries (``FTL::Perform_precondition``, case
    ``RANDOM_UNIFORM``): its first draw places a random walker, its second is the step, uniform in
    ``[0, lpas / cmt_entries]``, from the generator seeded with the drive file's ``Seed``.  With step 0
    the cache holds the first ``cmt_entries`` addresses the run will touch."""
    g = MQSimRandom(seed)
    g.uniform(0, float((lpas % (1 << 32)) - 2))
    return g.uniform_uint(0, (lpas % (1 << 32)) // max(int(cmt_entries), 1))
