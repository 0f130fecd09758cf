"""Where sweep work runs: this process (over every local device) or a Ray cluster.

A sweep is cut into :class:`Job` s (a chunk of configurations, or one workload group of a hybrid sweep).
An executor's ``map(jobs)`` yields ``(job, result, info)`` as jobs finish, in any order; the caller
checkpoints each result as it arrives, so whatever finished before a failure is kept.  A job's
function is a plain module-level callable ``fn(*args, device=...)`` returning NumPy arrays: the same
function runs in this process and in a Ray worker, so both give identical values.

* :class:`LocalExecutor` runs jobs on the local JAX devices, several threads per device (XLA releases the
  GIL while it computes), each job pinned to its thread's device: on an accelerator two, so that one
  job's computation is queued while the other's inputs are built or its results come back and are
  reduced on the host; on a CPU, one device, as many as it has cores (:func:`_in_flight`).  A CPU can be
  split into host devices (``XLA_FLAGS=--xla_force_host_platform_device_count=N``), one thread each.
* :class:`RayExecutor` sends each job as a Ray task (``num_cpus`` / ``num_gpus`` per task), retries a
  failed task up to ``max_retries`` times, and reports the jobs that still failed with their
  configurations (:class:`JobsFailed`).  Ray is imported only here, when ``runner=ray`` is chosen.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ssdx.params import ConfigError


@dataclass
class Job:
    """One unit of sweep work: ``fn(*args, device=...)`` computes it; ``configs`` are the configuration
    ids it covers (named in failure reports)."""

    index: int
    fn: Callable[..., Any]
    args: tuple
    configs: Any = field(default_factory=lambda: np.zeros(0, np.int64))


class Shared:
    """An object every job of a run reads (a sweep's tables), placed once where the workers read it:
    held here for the local executor, in Ray's object store for Ray (:meth:`RayExecutor.share`)."""

    def __init__(self, ref: Any, remote: bool):
        self.ref, self.remote = ref, remote


_SHARED: dict[str, Any] = {}
_SHARED_LOCK = threading.Lock()


def resolve(x: Any) -> Any:
    """The object a :class:`Shared` stands for (fetched from Ray once per worker process), else ``x``."""
    if not isinstance(x, Shared):
        return x
    if not x.remote:
        return x.ref
    import ray

    key = x.ref.hex()
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED.clear()  # one run's tables at a time
            _SHARED[key] = ray.get(x.ref)
        return _SHARED[key]


class JobsFailed(RuntimeError):
    """Jobs that failed after their retries; the others finished (and were checkpointed by the caller)."""

    def __init__(self, failures: list[tuple[Job, BaseException]], finished: int):
        self.failures = failures
        lines = []
        for job, err in failures[:10]:
            ids = job.configs  # an array or a range of configuration ids
            shown = ", ".join(str(int(i)) for i in ids[:8])
            shown += f", ... ({len(ids)} in all)" if len(ids) > 8 else ""
            first = str(err).strip().splitlines()
            lines.append(f"  chunk {job.index} (configurations {shown}): {type(err).__name__}: "
                         f"{first[-1] if first else ''}")
        more = f"\n  ... and {len(failures) - 10} more" if len(failures) > 10 else ""
        super().__init__(f"{len(failures)} chunk(s) failed after their retries; {finished} finished and were "
                         f"checkpointed (re-run the same command to resume):\n" + "\n".join(lines) + more)


def job_devices(devices: Any = "all") -> list:
    """The local JAX devices a :class:`LocalExecutor` uses: ``"all"`` (or null) or the first N."""
    import jax

    devs = jax.local_devices()
    if devices in (None, "all"):
        return devs
    if not isinstance(devices, int | np.integer) or isinstance(devices, bool) \
            or not 1 <= devices <= len(devs):
        raise ConfigError("runner.devices", devices,
                          f"'all' or an integer 1..{len(devs)} (local devices: {len(devs)})")
    return devs[: int(devices)]


def _collect(outcomes: Iterable[tuple[Job, Any]]) -> Iterator[tuple[Job, Any, dict[str, Any]]]:
    """Yield ``(job, result, info)`` for the jobs that finished; a :class:`ConfigError` (a bad value, not a
    failed computation) is raised at once, other failures are raised together at the end as
    :class:`JobsFailed` (the first one its cause)."""
    failures: list[tuple[Job, BaseException]] = []
    finished = 0
    for job, outcome in outcomes:
        if isinstance(outcome, ConfigError):
            raise outcome
        if isinstance(outcome, BaseException):
            failures.append((job, outcome))
            continue
        finished += 1
        yield job, *outcome
    if failures:
        raise JobsFailed(sorted(failures, key=lambda f: f[0].index), finished) from failures[0][1]


def _timed(job: Job, device) -> tuple[Any, dict[str, Any]]:
    t0 = time.perf_counter()
    res = job.fn(*job.args, device=device)
    return res, {"worker": str(device), "seconds": time.perf_counter() - t0}


def _in_flight(devices: list, cores: int | None = None) -> int:
    """Jobs run at once per device by default.  On an accelerator 2: the host's work on one chunk
    (building its inputs, copying and reducing its results) overlaps the device's work on the next.  On
    one CPU device as many as the process has cores, at least 2 and at most 8 (what one host device per
    core gave before, with one compile instead of one per device): XLA's CPU runtime does not keep every
    core busy through one chunk of a scan.  On several host devices of a CPU, which already share its
    cores, 1 each."""
    if getattr(devices[0], "platform", "cpu") != "cpu":
        return 2
    if len(devices) > 1:
        return 1
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(2, min(cores, 8))


class LocalExecutor:
    """Jobs in this process, spread over local devices (``in_flight`` worker threads per device, default
    :func:`_in_flight`; with one device and one thread, on the calling thread).  Where the default was
    taken (``chosen``), a sweep whose jobs already use every core (the request engine's compiled loop,
    ``ssdx.models.engine.sweep``) lowers it to one."""

    name = "local"

    def __init__(self, devices: Any = "all", in_flight: int | None = None):
        self.devices = job_devices(devices)
        if in_flight is not None and (isinstance(in_flight, bool) or not isinstance(in_flight, int)
                                      or in_flight < 1):
            raise ConfigError("runner.in_flight", in_flight,
                              "null (the runner's choice) or an integer >= 1: jobs at once per device")
        self.per_device = in_flight if in_flight is not None else _in_flight(self.devices)
        self.chosen = in_flight is None  # the runner's choice, which a job that uses every core may lower

    @property
    def workers(self) -> int:
        return len(self.devices)

    @property
    def concurrency(self) -> int:
        """Jobs that run at once: their timings overlap when this is above 1."""
        return len(self.devices) * self.per_device

    def share(self, obj: Any) -> Shared:
        """``obj`` for every job (:func:`resolve`): here, nothing to copy."""
        return Shared(obj, remote=False)

    def map(self, jobs: Iterable[Job]) -> Iterator[tuple[Job, Any, dict[str, Any]]]:
        """Yield ``(job, result, info)`` as jobs finish; every job runs, then the failed ones are named
        (:func:`_collect`)."""
        return _collect(self._outcomes(list(jobs)))

    def _outcomes(self, jobs: list[Job]) -> Iterator[tuple[Job, Any]]:
        """``(job, (result, info))`` or ``(job, exception)`` for every job, in finishing order."""
        if self.concurrency == 1 or len(jobs) <= 1:
            for job in jobs:
                try:
                    out = _timed(job, self.devices[0])
                except Exception as e:
                    out = e
                yield job, out
            return
        local = threading.local()
        ids = itertools.count()
        lock = threading.Lock()

        def call(job: Job):
            if not hasattr(local, "device"):
                with lock:  # threads spread evenly: thread k works on device k mod n
                    local.device = self.devices[next(ids) % len(self.devices)]
            return _timed(job, local.device)

        slots = self.concurrency
        with ThreadPoolExecutor(max_workers=slots, thread_name_prefix="ssdx-dev") as pool:
            todo = iter(jobs)  # at most two jobs per thread submitted: results stream back as they finish
            pending = {pool.submit(call, job): job for job in itertools.islice(todo, 2 * slots)}
            try:
                while pending:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in done:
                        job = pending.pop(fut)
                        nxt = next(todo, None)
                        if nxt is not None:
                            pending[pool.submit(call, nxt)] = nxt
                        try:
                            out = fut.result()
                        except Exception as e:
                            out = e
                        yield job, out
            finally:
                for fut in pending:
                    fut.cancel()


def _ray_call(fn: Callable[..., Any], args: tuple, x64: bool) -> tuple[Any, dict[str, Any]]:
    """Body of a Ray task: run one job on this worker's default device (its GPU when it was given one)."""
    import jax

    if bool(jax.config.jax_enable_x64) != x64:
        jax.config.update("jax_enable_x64", x64)
    t0 = time.perf_counter()
    res = fn(*args, device=None)
    try:
        import ray

        where = f"{ray.get_runtime_context().get_node_id()[:12]}/pid {os.getpid()}"
    except Exception:  # outside Ray (tests call it directly)
        where = f"pid {os.getpid()}"
    return res, {"worker": where, "seconds": time.perf_counter() - t0}


#: seconds to wait for a Ray cluster's head at ``runner.address`` to accept a connection
CONNECT_TIMEOUT_S = 10.0


def _reachable(address: str) -> None:
    """Refuse a ``host:port`` address (``ray://host:port`` too) whose port does not accept a TCP connection
    within :data:`CONNECT_TIMEOUT_S`: Ray itself retries such an address for minutes before it gives up."""
    import socket

    hostport = address.split("://", 1)[-1]
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError("runner.address", address, "null (start a local Ray), 'auto' or host:port")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as e:
        raise ConfigError("runner.address", address, f"no Ray head answers there ({e}); start the cluster "
                          "(ray start --head) or use null to start a local Ray") from None


class RayExecutor:
    """Jobs as Ray tasks on a local Ray (started here) or a cluster (``address``: ``auto`` or host:port).

    Each task asks for ``num_cpus`` CPUs and ``num_gpus`` GPUs (``None``: one GPU per task when the
    cluster has GPUs, else none).  GPU tasks run with ``XLA_PYTHON_CLIENT_PREALLOCATE=false`` so tasks
    sharing a GPU do not each claim most of its memory.  A task that raises or whose worker dies is
    retried up to ``max_retries`` times; tasks are spread over nodes (``SPREAD``) unless
    ``spread=False``.
    """

    name = "ray"

    def __init__(self, address: str | None = None, num_cpus: float = 1.0, num_gpus: float | None = None,
                 max_retries: int = 2, spread: bool = True, init_kwargs: Mapping[str, Any] | None = None):
        if not isinstance(max_retries, int | np.integer) or isinstance(max_retries, bool) \
                or not 0 <= max_retries <= 100:
            raise ConfigError("runner.max_retries", max_retries, "integer 0 <= x <= 100")
        if address is not None and not isinstance(address, str):
            raise ConfigError("runner.address", address, "null (start a local Ray), 'auto' or host:port")
        if not isinstance(spread, bool):
            raise ConfigError("runner.spread", spread, "true or false")
        if not isinstance(num_cpus, int | float) or isinstance(num_cpus, bool) or num_cpus < 0:
            raise ConfigError("runner.num_cpus", num_cpus, "a number >= 0 (CPUs per task)")
        if num_gpus is not None and (not isinstance(num_gpus, int | float) or isinstance(num_gpus, bool)
                                     or num_gpus < 0):
            raise ConfigError("runner.num_gpus", num_gpus, "null (auto) or a number >= 0 (GPUs per task)")
        try:
            import ray
        except ImportError:  # pragma: no cover - ray is a dependency; the message helps a trimmed install
            raise ConfigError("runner", "ray", "needs the 'ray' package (pip install 'ray>=2.9')") from None
        self._ray = ray
        self.started = False
        if not ray.is_initialized():
            if address not in (None, "", "auto", "local"):
                _reachable(address)
            kw = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.WARNING,
                  **dict(init_kwargs or {})}
            try:  # no address: a Ray of its own, never one another process happens to run on this machine
                ray.init(address=address or "local", **kw)
            except (ConnectionError, RuntimeError, ValueError) as e:
                rule = f"could not start or join Ray ({e}); use null (local), 'auto' or host:port"
                raise ConfigError("runner.address", address, rule) from None
            self.started = True
        gpus = float(ray.cluster_resources().get("GPU", 0.0))
        self.num_gpus = float(num_gpus) if num_gpus is not None else (1.0 if gpus > 0 else 0.0)
        self.num_cpus = float(num_cpus)
        self.max_retries = int(max_retries)
        self.spread = bool(spread)

    @property
    def workers(self) -> int:
        res = self._ray.cluster_resources()
        if self.num_gpus > 0:
            return max(1, int(res.get("GPU", 0) / self.num_gpus))
        return max(1, int(res.get("CPU", 1) / max(self.num_cpus, 1e-9)))

    def share(self, obj: Any) -> Shared:
        """``obj`` put once into Ray's object store; each worker process fetches it once (:func:`resolve`)
        instead of receiving a copy with every task."""
        return Shared(self._ray.put(obj), remote=True)

    def map(self, jobs: Iterable[Job]) -> Iterator[tuple[Job, Any, dict[str, Any]]]:
        """Yield ``(job, result, info)`` as tasks finish (after their retries); see :func:`_collect`."""
        return _collect(self._outcomes(jobs))

    def _outcomes(self, jobs: Iterable[Job]) -> Iterator[tuple[Job, Any]]:
        import jax

        ray = self._ray
        opts: dict[str, Any] = {"num_cpus": self.num_cpus, "num_gpus": self.num_gpus,
                                "max_retries": self.max_retries, "retry_exceptions": True}
        if self.num_gpus > 0:
            opts["runtime_env"] = {"env_vars": {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}}
        if self.spread:
            opts["scheduling_strategy"] = "SPREAD"
        task = ray.remote(_ray_call).options(**opts)
        x64 = bool(jax.config.jax_enable_x64)
        refs = {task.remote(job.fn, job.args, x64): job for job in jobs}
        try:
            while refs:
                done, _ = ray.wait(list(refs), num_returns=1)
                job = refs.pop(done[0])
                try:
                    out = ray.get(done[0])
                except Exception as e:  # RayTaskError (the job raised) or a lost worker, after the retries
                    out = getattr(e, "cause", None) or e
                yield job, out
        finally:
            for ref in refs:  # abandoned (an error or Ctrl-C in the caller): stop what is still queued
                ray.cancel(ref)

    def close(self) -> None:
        """Shut down the Ray this executor started (a joined cluster is left running)."""
        if self.started and self._ray.is_initialized():
            self._ray.shutdown()


def from_config(runner: Mapping[str, Any] | None) -> LocalExecutor | RayExecutor:
    """The executor a ``runner`` config group names (``local`` or ``ray``); unknown fields name themselves."""
    runner = dict(runner or {})
    name = runner.pop("name", "local")
    runner.pop("chunk_size", None)
    allowed = {"local": {"devices", "in_flight"},
               "ray": {"address", "num_cpus", "num_gpus", "max_retries", "spread"}}
    if name not in allowed:
        raise ConfigError("runner.name", name, "must be 'local' or 'ray'")
    unknown = sorted(set(runner) - allowed[name])
    if unknown:
        raise ConfigError(f"runner.{unknown[0]}", runner[unknown[0]],
                          f"unknown field for runner={name}; known: {sorted(allowed[name])} and chunk_size")
    if name == "local":
        return LocalExecutor(runner.get("devices", "all"), runner.get("in_flight"))
    return RayExecutor(address=runner.get("address"), num_cpus=runner.get("num_cpus", 1.0),
                       num_gpus=runner.get("num_gpus"), max_retries=runner.get("max_retries", 2),
                       spread=runner.get("spread", True))
