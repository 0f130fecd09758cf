"""The heap pad (``ssdx.core.heap``): a compiled call's buffers are reused instead of faulted in again."""

import json
import os
import subprocess
import sys

import pytest

PROBE = """
import ctypes, json, resource
import ssdx  # sets the pad, before JAX starts its backend
from ssdx.core import heap

faults = want = None  # per call, unless MEASURE_FAULTS (set before this text) is false
if MEASURE_FAULTS:
    import jax, jax.numpy as jnp, numpy as np
    f = jax.jit(lambda x: jnp.stack([jnp.sin(x), jnp.cos(x) * 2, x * x]).max(axis=0).argsort()[::97])
    x = jnp.asarray(np.random.default_rng(0).random(1 << 20, np.float32))
    want = np.asarray(f(x))
    faults = []  # per call, over rounds of 2 calls (each thread's heap settles within a few rounds; on a
    for _ in range(16):  # loaded machine XLA's threads take turns, so more rounds pass before every one has)
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(2):
            assert (np.asarray(f(x)) == want).all()
        faults.append((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / 2)
    faults = min(faults)
# a block past glibc's largest mmap threshold (32 MiB on 64-bit), taken by another thread than the main
# one (as XLA's are) whose heap (at most 64 MiB) has no room left for it: mapped on its own, and unmapped
# when freed, unless malloc takes every block from a heap; mallinfo2's hblks counts the mapped blocks
import threading
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
names = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
         "keepcost")
fields = [(n, ctypes.c_size_t) for n in names]
got = []
def take():
    first = libc.malloc(30 << 20)
    before = libc.mallinfo2().hblks
    block = libc.malloc(40 << 20)
    got.append(libc.mallinfo2().hblks - before)
    libc.free(block)
    libc.free(first)
mapped = None  # glibc before 2.33 has no mallinfo2
if hasattr(libc, "mallinfo2"):
    libc.mallinfo2.restype = type("Info", (ctypes.Structure,), {"_fields_": fields})
    t = threading.Thread(target=take)
    t.start()
    t.join()
    (mapped,) = got  # the thread's exception, had it raised, leaves none: this fails
print(json.dumps({"faults_per_call": faults, "pad": heap.retain_freed_memory(),
                  "sum": None if want is None else float(want.sum()),
                  "mapped_blocks": mapped}))
"""


def _probe(pad_mib: str | None, faults: bool = True) -> dict:
    """What :data:`PROBE` reports in a fresh process with ``SSDX_HEAP_PAD_MIB`` unset or ``pad_mib``; the
    page faults of a compiled call only if ``faults`` (32 calls over 2^20 floats: the slow part)."""
    env = {k: v for k, v in os.environ.items() if k != "SSDX_HEAP_PAD_MIB"}
    if pad_mib is not None:
        env["SSDX_HEAP_PAD_MIB"] = pad_mib
    r = subprocess.run([sys.executable, "-c", f"MEASURE_FAULTS = {faults}\n" + PROBE], capture_output=True,
                       text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_the_pad_is_set_on_import_and_zero_leaves_malloc_alone():
    """``import ssdx`` sets the pad (256 MiB) on Linux's glibc, ``SSDX_HEAP_PAD_MIB=0`` leaves malloc as it
    is: a 40 MiB block, which glibc would map on its own, then comes from a heap only with the pad.  The
    page faults the pad saves are measured in the validation tier (below)."""
    on, off = _probe(None, faults=False), _probe("0", faults=False)
    assert off["pad"] == 0
    if not sys.platform.startswith("linux"):
        assert on["pad"] == 0
    else:
        assert on["pad"] == 256 << 20
        if on["mapped_blocks"] is not None:
            assert (off["mapped_blocks"], on["mapped_blocks"]) == (1, 0)


@pytest.mark.validation
def test_the_pad_stops_the_per_call_page_faults_and_zero_leaves_malloc_alone():
    """A call over 2^20 floats allocates and frees several 4 MiB buffers: without the pad each call
    faults their pages in again (thousands), with it a fraction once the threads' heaps have settled
    (usually none); a 40 MiB block, which glibc would map on its own, comes from a heap; the results are
    the same.  Elsewhere than Linux's glibc nothing is set."""
    on, off = _probe(None), _probe("0")
    assert off["pad"] == 0
    if not sys.platform.startswith("linux"):
        assert on["pad"] == 0
    else:
        assert on["pad"] == 256 << 20
        assert off["faults_per_call"] > 2000, off
        assert on["faults_per_call"] < off["faults_per_call"] / 3, (on, off)
        if on["mapped_blocks"] is not None:
            assert (off["mapped_blocks"], on["mapped_blocks"]) == (1, 0)
    assert on["sum"] == off["sum"]


@pytest.mark.parametrize("raw, used", [("lots", 256), ("4096", 2047), ("-5", 256)])
def test_a_bad_pad_is_named_in_a_warning_and_a_valid_one_used(monkeypatch, raw, used):
    """The variable, its value and the rule in the warning; (as if not on Linux, so this test process's
    own malloc settings stay as they are) nothing set, and the answer kept for the process."""
    from ssdx.core import heap

    monkeypatch.setattr(heap, "_done", None)
    monkeypatch.setattr(heap.sys, "platform", "darwin")
    with pytest.warns(UserWarning, match=f"SSDX_HEAP_PAD_MIB='{raw}': must be a whole number of MiB from 0 "
                                         f"to 2047; using {used}"):
        assert heap.retain_freed_memory({"SSDX_HEAP_PAD_MIB": raw}) == 0
    assert heap._done == 0
