"""Progress bars for long work: ETA and rate (configurations, requests or steps per second).

Quiet when the caller says so (``quiet=true``), when ``TQDM_DISABLE`` is set, or in CI (``CI`` set), so CI
logs stay readable; tqdm itself ignores ``TQDM_DISABLE`` once ``disable=`` is passed, hence this helper.
:func:`close_open` ends the bars an error left open (the CLI calls it before it prints the error).
"""

from __future__ import annotations

import os
import weakref

#: the bars :func:`bar` made that are not closed yet (closed ones drop out; so do collected ones)
_open: weakref.WeakSet = weakref.WeakSet()


def quiet_env() -> bool:
    """True when the environment asks for no progress bars (``TQDM_DISABLE`` or ``CI`` set, not 0/false)."""
    return any(os.environ.get(k, "").strip().lower() not in ("", "0", "false", "no")
               for k in ("TQDM_DISABLE", "CI"))


def bar(total: int | None, desc: str, unit: str = "cfg", enabled: bool = True, initial: int = 0):
    """A tqdm bar (``tqdm.auto``: a widget in notebooks) showing count, rate in ``unit``/s and ETA."""
    from tqdm.auto import tqdm

    b = tqdm(total=total, desc=desc, unit=unit, initial=initial, disable=not enabled or quiet_env(),
             mininterval=0.5, smoothing=0.1, dynamic_ncols=True)
    if not b.disable:
        _open.add(b)
    return b


def close_open() -> None:
    """Close every bar of :func:`bar` still open (work stopped by an error), so that what is printed next
    starts on a line of its own rather than at the end of a bar's line."""
    for b in list(_open):
        b.close()
    _open.clear()
