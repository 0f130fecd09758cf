"""Booking of short transfers on a shared resource (a channel bus, an SCM bank, the host link) as a fluid
backlog: the rule the request-level engine (``ssdx.models.engine.model``) and the SCM/NAND hybrid model
(``ssdx.models.hybrid.model``) both use for resources whose individual transfers are short next to a die
operation."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def fluid_book(end: jax.Array, ready: jax.Array, dur: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Book ``dur`` (s) on a short-transfer resource (channel bus, host link) as a fluid backlog: ``end`` is
    when the work booked so far would be done if served from now on, so work ready at ``ready`` starts
    at ``max(ready, end)`` and the backlog grows by ``dur`` from ``max(end, 0)``.  The backlog drains with
    the issue clock, not with the (out-of-order) ready times of the work in it: idle time before a
    transfer booked for later is not lost and nothing waits behind work that is not ready (no
    head-of-line blocking); capacity is kept, since the backlog only drains at one second per second.
    Returns the start and the new backlog end."""
    return jnp.maximum(ready, end), jnp.maximum(end, 0.0) + dur
