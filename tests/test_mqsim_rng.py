"""MQSim's random number generator (``ssdx.workloads.mqsim_rng``) against MQSim's own: the preconditioning's
two draws, from a program built against MQSim's ``RandomGenerator.o`` and ``CMRRandomGenerator.o``
(commit ``7ec40e3``) that prints ``Uniform(0, lpas - 2)`` and ``Uniform_uint(0, lpas / entries)`` of
``RandomGenerator(seed)``, as ``FTL::Perform_precondition`` draws them."""

from __future__ import annotations

import pytest

from ssdx.workloads import mqsim_rng

#: (seed, addresses, CMT entries) -> (random walker, random step), printed by MQSim's generator; the first
#: is a drive whose step is 0 (its CMT holds the first addresses the run touches), the others not
MQSIM = {
    (7520, 864288, 599186): (810120, 0),
    (4403, 38199625, 1777297): (8410813, 12),
    (2068, 17118392, 247393): (15462618, 49),
    (16235, 30165834, 990470): (10762664, 14),
    (12440, 14090828, 196937): (13733755, 32),
    (1, 1000, 10): (14, 8),
    (199, 5000000, 4096): (3942018, 932),
    (19999, 123456, 100000): (30819, 1),
}


@pytest.mark.parametrize("args", sorted(MQSIM))
def test_the_preconditioning_draws_are_mqsims(args):
    seed, lpas, entries = args
    g = mqsim_rng.MQSimRandom(seed)
    walker = int(g.uniform(0, lpas - 2))
    step = g.uniform_uint(0, lpas // entries)
    assert (walker, step) == MQSIM[args]
    assert mqsim_rng.cmt_step(seed, lpas, entries) == MQSIM[args][1]


def test_draws_lie_in_the_open_unit_interval_and_differ():
    g = mqsim_rng.MQSimRandom(6452)
    x = [g.next_double() for _ in range(2000)]
    assert all(0.0 < v < 1.0 for v in x) and len(set(x)) == len(x)
    assert 0.45 < sum(x) / len(x) < 0.55
