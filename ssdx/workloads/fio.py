"""fio job files as ssdx workloads: ``workload.fio=PATH.fio`` (``workload.fio_job``, ``fio_unknown``).

Written from fio's own documentation — the HOWTO and the fio(1) man page ("Job file format",
"Environment variables", "Parameter types" and the options named below).  Where the HOWTO and fio's
parser read a form differently, the form is refused with the reason instead of guessed.

**Syntax** (fio HOWTO, "Job file format").  INI sections: ``[name]`` starts a job; a section whose name
begins with ``global`` (fio compares the first six letters) sets defaults for the jobs *below* it —
later ``[global]`` sections add to and override earlier ones, and a job keeps what was set above it.  A
line whose first non-blank character is ``;`` or ``#`` is a comment, and fio cuts any line at its first
``;`` or ``#``.  ``key=value`` or a bare ``key`` (a flag: ``time_based``, ``norandommap``);
``include FILE`` pulls in a file of options (no sections; relative to the working directory, else to the
including file; at most 8 deep).  ``${VAR}`` in a value is replaced by the environment variable, the
empty string when it is unset (fio's rule).  Aliases: ``readwrite`` = ``rw``, ``blocksize`` = ``bs``,
``blocksize_range`` = ``bsrange``, ``ba`` = ``blockalign``, ``io_limit`` = ``io_size``, ``timeout`` =
``runtime``, ``ratemin`` = ``rate_min``, ``ratecycle`` = ``rate_cycle`` (fio's option table).

**Numbers** (fio HOWTO, "int" and ``kb_base``).  Whole numbers (decimal or ``0x`` hex) with an optional
unit, not case sensitive.  With ``kb_base=1024`` (fio's default) ``k``/``kb``, ``m``/``mb``, ``g``,
``t``, ``p`` are powers of 1024 and ``KiB``/``MiB``/``GiB``/``TiB``/``PiB`` powers of *1000* (fio keeps
old scripts working by inverting the standards); ``kb_base=1000`` swaps the two — for every value of
the section that sets it, and, from a [global] section, of the sections after it (values already read
keep their reading, as fio parses each section when it reads it).  ``b`` means bytes.
``size``, ``offset`` and ``offset_increment`` also take ``N%`` (1-100) of the drive's user capacity.
Times: ``d``, ``h``, ``m`` (minutes), ``s``, ``ms``/``msec``, ``us``/``usec``; without a unit
``runtime`` is in seconds and ``thinktime``/``thinktime_spin`` in microseconds.

*Refused forms*: fractions (``1.5g``: fio reads integers and would take ``1``), ``ki``/``mi``/``gi``/
``ti``/``pi`` without ``b`` and the time unit ``sec`` (the HOWTO and fio's parser read them differently),
arithmetic in parentheses and the reserved keywords ``$pagesize``/``$mb_memory``/``$ncpus`` (they
depend on the machine fio runs on), ``z`` zone units.

**Supported options** (:data:`SUPPORTED`): ``rw`` (read, write, randread, randwrite, rw/readwrite,
randrw; ``:N`` — random: a new offset every N requests, the others continuing sequentially or, with
``rw_sequencer=identical``, repeating it; sequential: N bytes skipped after each request, a negative N a
step back),
``rw_sequencer``, ``rwmixread``/``rwmixwrite`` (the later one wins), ``bs`` (``r,w,t`` forms, a value
not ending in a comma applying to the types after it), ``bsrange``, ``bssplit`` (blank percentages share
the rest; the percentages must add up to 100), ``blockalign``, ``iodepth``, ``numjobs``, ``size``,
``offset``, ``offset_align``, ``offset_increment``, ``io_size``, ``number_ios``, ``loops``, ``runtime``,
``time_based``, ``rate``, ``rate_iops``, ``rate_process`` (linear, poisson), ``random_distribution``
(random, zipf[:θ[:c]], pareto[:h[:c]], normal[:d[:c]], zoned:…, zoned_abs:…; one set for all
directions), ``norandommap``, ``randseed``, ``thinktime``, ``thinktime_blocks``, ``thinktime_spin``,
``kb_base``, and the pacing options below (``startdelay``, ``flow``, ``verify_backlog``,
``latency_target``), ``fill_device`` (to the drive's end) and ``cmd_type=nvme``.

**Ignored by design** (:data:`IGNORED_BY_DESIGN`, each with its reason): options that do not change the
requests the drive sees in ssdx's model — naming and files (``name``, ``filename``, ...), reporting and
logs (``group_reporting``, ``write_lat_log``, ...), how the host issues I/O (``ioengine``, ``direct``,
``thread``, CPU affinity, batching; the engine models the device, every request reaching it as with
``direct=1``), data content (``zero_buffers``, ``buffer_compress_percentage``, ...; ssdx models no
data), ``io_submit_mode`` (which of fio's threads submit), the minimum rates ``rate_min``,
``rate_iops_min`` and their window ``rate_cycle`` (fio ends a job below them; ssdx runs it whole and
reports its rate), I/O priorities (an NVMe command carries none), ``atomic`` (an ordinary write on the
wire) and ``randrepeat`` (ssdx is always repeatable).  They are accepted and named in the
summary's ``fio_ignored_by_design``.

**Any other option is refused**: :class:`FioError` (a :class:`ssdx.params.ConfigError`: exit status 2)
naming the option and its ``file:line`` — e.g. ``fsync``, ``exitall``, ``percentage_random``,
``nrfiles``, ``filesize``, ``zonemode``, ``fdp``, ``write_mode``.  With
``workload.fio_unknown=warn`` each is named in a :class:`FioIgnoredWarning` and in the summary's
``fio_ignored`` and the run goes on without it.  Malformed files (a line that is no section, option or
comment, a bad number or unit, an unknown ``rw``, a missing file, no job, an unknown ``fio_job``) name
the file and the line.  Files are read as text only (no evaluation), at most 1 MiB, lines and expanded
values at most 4096 characters, at most 256 jobs of at most 1024 clones each.

**Streams** (``ssdx.workloads.synthetic.Pattern``/``PatternStream``, which ``synthetic.fio_like`` also
uses).  Each job is ``numjobs`` clones; clone ``k`` works on ``[offset + k·offset_increment, + size)``
(capped at the drive's end; no ``size``: to the end; a ``%`` offset is aligned up to ``offset_align``,
else the smallest block size, as fio does).  Random offsets follow ``random_distribution`` — the
formulas are ``synthetic.Distribution``'s: Gray et al.'s zipf generator, fio's pareto power law and its
12-sample normal, all hashed over the blocks as fio hashes them, and contiguous zones.  A uniform one
keeps fio's *random map* (each block once per pass, here a keyed permutation; with several block sizes
over the smallest, larger requests overlapping) unless ``norandommap`` or ``blockalign`` is given.
``bsrange`` sizes are drawn as fio draws them (multiples of the smallest, uniform).  Clone ``k`` of the
job in section order ``j`` draws from ``(randseed or the config seed, j, k)``: deterministic, and a job
picked with ``fio_job`` gives the stream it has among all.

**How many requests.**  A clone stops after ``number_ios`` requests, or once it has moved ``io_size``
(else its region's size in whole blocks) × ``loops`` bytes — unless ``time_based`` — or, in the open
loop, at ``runtime``.  A closed-loop ``time_based`` job runs for a time, which ssdx cannot turn into a count
before simulating it: its count is ``workload.requests``.  The merged stream is at most
``workload.requests`` long (default 100,000; at most 10^8): the summary's ``fio_truncated`` says when
the jobs held more and each job's ``bound`` says what ended it.  Streams are generated lazily (2,048
requests per clone at a time, merged into chunks of 65,536), so a long stream costs no memory.

**Job groups** (fio HOWTO, ``stonewall``). A job with ``stonewall`` (alias ``wait_for_previous``) waits for
every job before it to finish: it starts a group (:meth:`FioWorkload.groups`), and the groups run one after
another on the same drive (``ssdx.models.engine.jobs.replay_groups``); ``wait_for=NAME`` starts a group where
the named job is the only one running before it (later jobs waiting for the same job join it; where fio would
start a job while others run, it is refused); ``new_group`` only regroups fio's report. A group whose jobs
``verify`` (fio's verify phase; ``do_verify``) is followed by the reads of what they wrote, in the order
written (``ssdx.workloads.fio_stream.VerifyStream``). A stream of several phases at once is refused
(:meth:`FioWorkload.stream`). A group whose jobs carry fio's steady-state detection (``steadystate``/``ss``,
``ss_dur``, ``ss_ramp``, ``ss_interval``: ``ssdx.workloads.fio_job.SteadyState``) ends when fio would end it
(``ssdx.models.engine.steady``).

**Pacing** (fio HOWTO). ``startdelay`` shifts a timed job's arrivals (a range ``lo-hi``: each clone draws its
own delay from its seed); in the closed loop, which issues from the group's start, it is refused.
``flow``/``flow_id`` (fio's ``flow.c``: a clone issues only while its share of the flow's issued requests is
at most its weight's share): the clones of a flow keep the part of the closed loop their summed depths give
them, split by weight request by request (``ssdx.workloads.fio_stream.flow_shares``); ``flow_sleep`` other
than 0 (a clone over its share drains its queue and sleeps) is refused. ``verify_backlog`` N (fio's
``check_get_verify``): each clone's unverified writes are read back, oldest first, ``verify_backlog_batch`` at
a time, whenever they reach a multiple of N after a write, and the rest at the clone's end
(``ssdx.workloads.fio_stream``); fio keeps written blocks only with ``do_verify``. ``latency_target`` runs
fio's search for a queue depth (``ssdx.models.engine.latency_search``) in a group of its own.

**Jobs share the drive.**  All selected jobs and clones of a group merge into one stream on one drive.
Closed loop
(no ``rate``, ``rate_iops`` or ``thinktime``): the queue depth is the sum of the clones' ``iodepth``
(``workload.queue_depth`` and ``engine.loop`` are overridden) and request ``i`` of a clone is ordered at
``(i + ½)/iodepth`` — each clone issues in proportion to its share of the queue; a clone that ends
leaves the queue to the others.  Open loop (any of those options; every job must then have one):
requests arrive at their clone's times and at most the summed depths are outstanding.

**Timing** (open loop, fio HOWTO ``rate``, ``rate_iops``, ``rate_process``, ``thinktime``).  A
direction with ``rate`` B (bytes/s; or ``rate_iops`` × its smallest block size, as fio converts it)
issues a request once the direction's earlier bytes ÷ B have elapsed (``poisson``: exponential gaps of
mean ``1/IOPS``, IOPS = B ÷ smallest size); an unrated direction follows the request before it.  fio
may switch to the other direction while one is ahead of its rate (skewing the mix, its HOWTO warns);
ssdx keeps ``rwmixread``'s mix and issues in order.  ``thinktime`` T after every ``thinktime_blocks`` B
requests: request ``i`` is issued no earlier than the one before it plus T at each multiple of B, and
no earlier than its rate allows (fio catches up with its rate after a stall) — the schedule fio
produces when the drive serves each group instantly; a real run is slower by the groups' service
time.  ``thinktime`` caps a clone's depth at ``thinktime_blocks`` (fio HOWTO).  ``runtime`` cuts the
clone's requests at that time.

**Fluid fills** (:meth:`FioWorkload.fill`, ``task=fill``).  The fluid model writes new data: one write
size, no address space.  A write job (``write``/``randwrite``, or a mixed one with ``rwmixread=0``)
maps to ``pattern`` (sequential/random), ``block_kib`` (its single write size), ``queue_depth`` (summed
``iodepth``, capped by ``thinktime_blocks``), ``fill_fraction`` (the clones' bytes — ``io_size`` or the
region's bytes (the fluid model is continuous), × ``loops``, at most ``number_ios`` × size — over the
capacity the config's ``workload.prefill_fraction`` leaves free: fio has no notion of data already on
the drive, so the pre-fill stays the config's), and with ``thinktime`` (one clone only) ``burst_gb`` =
``thinktime_blocks`` × size and ``idle_s`` = ``thinktime``.  ``offset`` places the region only.
Refused with the reason: reads, several write sizes, jobs of different patterns or sizes,
``time_based``/``runtime``, ``rate``/``rate_iops``, rewrites (``io_size`` or ``loops`` beyond the region,
overlapping clones — give them ``offset_increment`` — random writes without fio's random map:
``norandommap``, a non-uniform ``random_distribution``, ``blockalign``, ``randwrite:N``), ``rw=write:N``
holes, more bytes than are free.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ssdx.params import ConfigError
from ssdx.workloads.fio_ini import FioError, Section, Setting, parse_file
from ssdx.workloads.fio_job import MAX_QUEUE_DEPTH, Job, read_job
from ssdx.workloads.fio_options import IGNORED_BY_DESIGN, SUPPORTED
from ssdx.workloads.fio_stream import FioStream, VerifyStream, region
from ssdx.workloads.traces import WRITE

__all__ = ["SUPPORTED", "IGNORED_BY_DESIGN", "FioError", "FioIgnoredWarning", "FioStream", "FioWorkload",
           "Job", "Section", "Setting", "load", "parse_file", "read_job"]

MAX_REQUESTS = 100_000_000


class FioIgnoredWarning(UserWarning):
    """An option ssdx does not model, skipped under ``workload.fio_unknown=warn``."""


@dataclass
class FioWorkload:
    """The selected jobs of a fio job file (:func:`load`) and what was left out."""

    path: str
    jobs: list[Job]
    ignored: list[dict[str, Any]]
    ignored_by_design: list[str]
    #: "" the file's jobs; "run" or "verify" one phase of :meth:`groups`: a group's jobs or their verify reads
    phase: str = ""

    @property
    def name(self) -> str:
        """The job's name, or the merged jobs' names joined by '+'."""
        return "+".join(j.name for j in self.jobs)

    @property
    def open_loop(self) -> bool:
        """Open loop: the jobs are timed (``rate``, ``rate_iops``, ``thinktime``); a verify phase, whose reads
        no rate paces here, runs in the closed loop."""
        return self.jobs[0].timed and self.phase != "verify"

    @property
    def queue_depth(self) -> int:
        """Outstanding requests of the merged stream: every clone's depth, summed (of the first group when
        ``stonewall`` splits the jobs into groups: :meth:`groups`)."""
        return sum(j.depth * j.numjobs for j in self.groups()[0].jobs)

    def _stonewalled(self) -> list[list[Job]]:
        out: list[list[Job]] = []
        waitee: str | None = None  # the job the current group waits for (wait_for), else None
        for j in self.jobs:
            if not out or j.stonewall:
                out.append([])
                waitee = None
            elif j.wait_for is not None and j.wait_for != waitee:
                self._check_wait(j, out[-1])
                out.append([])
                waitee = j.wait_for
            elif waitee is not None and j.wait_for is None:
                j.fail("name", f"this job would start at once, beside job [{waitee}], while the job before "
                               f"it waits for [{waitee}]: give it wait_for={waitee}, or stonewall")
            out[-1].append(j)
        return out

    @staticmethod
    def _check_wait(job: Job, group: list[Job]) -> None:
        """Refuse a ``wait_for`` that is not a group boundary (fio HOWTO ``wait_for``: the job starts once
        every clone of the named job is done, the jobs after it that do not wait starting at once): the
        named job must be the only one running before it; one that runs beside others, or that ran in an
        earlier group, would have this job start while other jobs run."""
        named = job.wait_for
        if [j.name for j in group] == [named]:
            return
        if not any(j.name == named for j in group):
            job.fail("wait_for", f"wait_for={named}: no job of that name runs just before it (fio takes no "
                                 "forward references, and a job that ran in an earlier group ended while "
                                 "others ran; with workload.fio_job, select the job it waits for too): use "
                                 "stonewall")
        others = ", ".join(j.name for j in group if j.name != named)
        job.fail("wait_for", f"wait_for={named}: that job runs beside {others}, beside which this job would "
                             "start; separate them with stonewall")

    def groups(self) -> list[FioWorkload]:
        """The phases fio runs one after another: a job with ``stonewall`` (or ``wait_for_previous``) waits
        for every job before it to finish, so it starts a new group (fio HOWTO, ``stonewall``), the jobs of
        one group running together; a group whose jobs ``verify`` is followed by its verify phase, the
        reads of what they wrote (``phase="verify"``).  ``[self]`` for a file of one group without verify
        (and for a phase)."""
        if self.phase:
            return [self]
        out = []
        for g in self._stonewalled():
            run = FioWorkload(self.path, g, self.ignored, self.ignored_by_design, "run")
            out.append(run)
            after = [j for j in g if j.verify and not j.verify_backlog]  # verify_backlog: while writing
            if after:
                out.append(dataclasses.replace(run, jobs=after, phase="verify"))
        return [self] if len(out) == 1 else out

    def describe(self) -> list[dict[str, Any]]:
        """Per job: name, where, group (:meth:`groups`), rw, read fraction, clones, depth, loop and what ends
        it."""
        group = {id(j): g for g, w in enumerate(self.groups()) for j in w.jobs if w.phase != "verify"}
        return [{"name": j.name, "where": f"{j.path}:{j.line}", "group": group[id(j)], "rw": j.rw,
                 "read_fraction": j.read_fraction, "numjobs": j.numjobs, "depth": j.depth,
                 "open_loop": j.timed, "bound": j.bound(j.timed)}
                for j in self.jobs]

    def stream(self, capacity_bytes: float, max_requests: int, seed: int = 0) -> FioStream | VerifyStream:
        """The merged stream on a drive of ``capacity_bytes``, at most ``max_requests`` long (a verify phase:
        its reads, :class:`VerifyStream`).  Jobs of several phases (``stonewall`` groups, ``verify``) are
        refused here: the phases run one after another (:meth:`groups`; a replay streams each,
        ``ssdx.models.engine.jobs.replay_groups``)."""
        if not 1 <= max_requests <= MAX_REQUESTS:
            raise ConfigError("workload.requests", max_requests, f"integer 1 <= x <= {MAX_REQUESTS:.0e}")
        groups = self.groups()
        if len(groups) > 1:
            j = groups[1].jobs[0]
            how = ("stonewall runs its group after the jobs before it" if groups[1].phase == "run" else
                   "verify reads back what the job wrote after its writes")
            raise FioError(*j.at("stonewall" if groups[1].phase == "run" else "verify"),
                           f"job [{j.name}]: {how}, on the drive they leave; experiment=trace_replay runs "
                           "the phases in turn, here they would run at once: pick one group's jobs with "
                           "workload.fio_job, or drop verify", field="workload.fio", value=self.path)
        stream = FioStream(self.jobs, self.open_loop, int(capacity_bytes), int(max_requests), int(seed))
        return VerifyStream(stream) if self.phase == "verify" else stream

    def fill(self, capacity_bytes: float, prefill_fraction: float) -> dict[str, Any]:
        """The fluid fill's workload fields (``pattern``, ``block_kib``, ``queue_depth``, ``fill_fraction``,
        ``burst_gb``, ``idle_s``) of write jobs; jobs it cannot represent are refused (module docstring)."""
        for job in self.jobs:
            if job.verify:
                job.fail("verify", "verify reads back what the job wrote: a fill models host writes only")
        groups = self.groups()
        if len(groups) > 1:
            j = groups[1].jobs[0]
            j.fail("stonewall", "stonewall: groups run one after another, each at its own depth; the fluid "
                                "fill has one; pick one group's jobs with workload.fio_job")
        capacity = int(capacity_bytes)
        pattern = block = None
        regions: list[tuple[int, int, Job]] = []
        written = 0
        clones = sum(j.numjobs for j in self.jobs)
        burst_gb = idle_s = 0.0
        for job in self.jobs:
            if job.read_fraction > 0:
                job.fail(next((o for o in ("rwmixread", "rwmixwrite") if o in job.options), "rw"),
                         f"rw={job.rw} reads ({100 * job.read_fraction:g} %): a fill models host writes only")
            for opt, bad in (("time_based", job.time_based), ("runtime", job.runtime_s > 0),
                             ("rate" if "rate" in job.options else "rate_iops", job.rates[WRITE] > 0)):
                if bad:
                    job.fail(opt, f"{opt}: a fill writes a byte amount at the drive's pace (no time limit or "
                                  "host rate in the fluid model); give size or io_size instead")
            if len(job.write_sizes) != 1:
                job.fail("bssplit" if "bssplit" in job.options else "bsrange",
                         "several write sizes: the fluid fill has one command size")
            if job.hole_bytes:
                job.fail("rw", "rw=write:N leaves holes (or, negative, steps back): the fluid fill writes "
                               "contiguous new data")
            if job.random and not job.random_map or job.run_length > 1:
                why = next(o for o, bad in (("norandommap", "norandommap" in job.options),
                                            ("random_distribution", not job.distribution.uniform),
                                            ("blockalign", "blockalign" in job.options), ("rw", True)) if bad)
                job.fail(why, f"{why}: random writes that repeat blocks (fio's random map off, or "
                              "randwrite:N runs); the fluid fill writes new data only")
            bs = next(iter(job.write_sizes))
            pat = "random" if job.random else "sequential"
            if pattern is not None and (pat, bs) != (pattern, block):
                job.fail("rw", f"{pat} {bs}-byte writes next to {pattern} {block}-byte ones: the fluid fill "
                               "has one pattern and one command size")
            pattern, block = pat, bs
            for k in range(job.numjobs):
                start, span = region(job, k, capacity)
                nbytes = (job.io_size or span) * job.loops
                if nbytes > span:
                    job.fail("io_size" if job.io_size else "loops",
                             f"clone {k} writes {nbytes} bytes over a {span}-byte region: rewrites; "
                             "the fluid fill writes new data only")
                if job.number_ios:
                    nbytes = min(nbytes, job.number_ios * bs)
                for s0, l0, other in regions:
                    if start < s0 + l0 and s0 < start + span:
                        job.fail("offset_increment" if job.numjobs > 1 else "offset",
                                 f"clone {k}'s region overlaps job [{other.name}]'s: rewrites; give the "
                                 "clones disjoint regions (offset, offset_increment)")
                regions.append((start, span, job))
                written += nbytes
            if job.thinktime_s:
                if clones > 1:
                    job.fail("thinktime", "thinktime with several clones: their pauses interleave, the fluid "
                                          "fill has one idle pattern")
                burst_gb, idle_s = job.thinktime_blocks * bs / 1e9, job.thinktime_s
        free = capacity * (1.0 - prefill_fraction)
        if written > free * (1 + 1e-9):
            j = self.jobs[0]
            j.fail("size", f"the jobs write {written} bytes, more than the {free:.0f} bytes free after "
                           f"workload.prefill_fraction={prefill_fraction:g}")
        return {"pattern": pattern, "block_kib": block / 1024, "queue_depth": self.queue_depth,
                "fill_fraction": min(written / free, 1.0), "burst_gb": burst_gb, "idle_s": idle_s}


def load(path: os.PathLike | str, job: str | None = None, unknown: str = "raise",
         env: Mapping[str, str] | None = None) -> FioWorkload:
    """Read a fio job file: every job merged, or the sections named ``job`` (``workload.fio_job``).

    ``unknown``: ``raise`` (default) refuses an option ssdx neither models nor ignores by design, naming
    it and its file:line; ``warn`` names it in a :class:`FioIgnoredWarning` and in ``ignored``."""
    if unknown not in ("raise", "warn"):
        raise ConfigError("workload.fio_unknown", unknown, "must be 'raise' or 'warn'")
    sections = parse_file(path, env)
    if not sections:
        raise FioError(path, 0, "holds no job (only [global] sections, or nothing)")
    if job is not None:
        chosen = [s for s in sections if s.name == str(job)]
        if not chosen:
            raise FioError(path, 0, f"no job named {job!r}; its jobs: {', '.join(s.name for s in sections)}",
                           field="workload.fio_job", value=job)
        sections = chosen
    ignored: dict[tuple[str, int], dict[str, Any]] = {}
    by_design: set[str] = set()
    for sec in sections:
        for name, st in list(sec.options.items()):
            if name in SUPPORTED:
                continue
            if name in IGNORED_BY_DESIGN:
                by_design.add(name)
                continue
            if unknown == "raise":
                raise FioError(st.path, st.line, f"option '{st.key}' is not modelled by ssdx (supported: "
                                                 "ssdx.workloads.fio.SUPPORTED); remove it, or set "
                                                 "workload.fio_unknown=warn to run without it")
            del sec.options[name]
            if (st.path, st.line) not in ignored:
                ignored[(st.path, st.line)] = {"option": st.key, "value": st.value, "where": st.where}
                warnings.warn(f"{st.where}: fio option '{st.key}' ignored: not modelled by ssdx "
                              "(workload.fio_unknown=warn)", FioIgnoredWarning, stacklevel=2)
    jobs = [read_job(s) for s in sections]
    workload = FioWorkload(str(path), jobs, list(ignored.values()), sorted(by_design))
    for group in workload.groups():  # the jobs of a group run together, in one loop
        _check_group(group.jobs)
    return workload


def _check_group(jobs: list[Job]) -> None:
    """Refuse a group of jobs that run together (:meth:`FioWorkload.groups`) whose loops differ or whose
    summed depth is more than the engine tracks."""
    timed = [j for j in jobs if j.timed]
    if timed and len(timed) != len(jobs):
        closed = next(j for j in jobs if not j.timed)
        raise FioError(closed.path, closed.line,
                       f"job [{closed.name}] has no rate, rate_iops or thinktime but job [{timed[0].name}] "
                       "has: the merged jobs run in one loop; pick one with workload.fio_job, time both, or "
                       "run them one after the other (stonewall)")
    for j in jobs:
        if j.start_delay != (0.0, 0.0) and not j.timed:
            j.fail("startdelay", "startdelay in a closed-loop job: the closed loop issues each request as a "
                                 "slot frees, from the group's start; time the job (rate, rate_iops, "
                                 "thinktime) or run it after the others (stonewall)")
        if j.latency is not None and (len(jobs) > 1 or j.numjobs > 1 or j.timed or j.steady or j.ramp_s):
            j.fail("latency_target", "latency_target searches one clone's queue depth: give it a group of "
                                     "its own (stonewall), numjobs=1, no rate, rate_iops or thinktime, no "
                                     "steadystate and no ramp_time")
    depth = sum(j.depth * j.numjobs for j in jobs)
    if depth > MAX_QUEUE_DEPTH:
        raise FioError(jobs[0].path, jobs[0].line, f"iodepth x numjobs summed over the jobs is {depth}, more "
                                                   f"than the {MAX_QUEUE_DEPTH} outstanding requests the "
                                                   "engine tracks")
