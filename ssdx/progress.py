"""Progress bars for long work: ETA and rate (configurations, requests or steps per second).

Quiet when the caller says so (``quiet=true``), when ``TQDM_DISABLE`` is set, or in CI (``CI`` set), so CI
logs stay readable; tqdm itself ignores ``TQDM_DISABLE`` once ``disable=`` is passed, hence this helper.
"""

from __future__ import annotations

import os


def quiet_env() -> bool:
    """True when the environment asks for no progress bars (``TQDM_DISABLE`` or ``CI`` set, not 0/false)."""
    return any(os.environ.get(k, "").strip().lower() not in ("", "0", "false", "no")
               for k in ("TQDM_DISABLE", "CI"))


def bar(total: int | None, desc: str, unit: str = "cfg", enabled: bool = True, initial: int = 0):
    """A tqdm bar (``tqdm.auto``: a widget in notebooks) showing count, rate in ``unit``/s and ETA."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, initial=initial, disable=not enabled or quiet_env(),
                mininterval=0.5, smoothing=0.1, dynamic_ncols=True)
