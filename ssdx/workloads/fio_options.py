"""fio job files, the option tables: what ssdx models of each option it takes (:data:`SUPPORTED`) and
the options it ignores by design, with the reason (:data:`IGNORED_BY_DESIGN`).  Any other option is
refused with its name and line (``ssdx.workloads.fio_job``), or named in a warning with
``workload.fio_unknown=warn``."""

from __future__ import annotations

#: Options ssdx models, with what it does with them (module docstring).
SUPPORTED: dict[str, str] = {
    "rw": "I/O type and mix: read, write, randread, randwrite, rw, readwrite, randrw; ':N' suffix",
    "rw_sequencer": "sequential | identical: what the requests between random offsets of rw=rand*:N do",
    "rwmixread": "percentage of reads of a mixed job",
    "rwmixwrite": "percentage of writes of a mixed job (the later of the two wins)",
    "bs": "block size, bytes; r,w[,t] forms",
    "bsrange": "block size range lo-hi (or lo:hi), multiples of lo drawn uniformly; r,w forms",
    "bssplit": "block size weights bs/perc:bs/perc; r,w forms",
    "blockalign": "alignment of random offsets; turns fio's random map off",
    "iodepth": "outstanding requests per clone",
    "numjobs": "clones of the job, sharing the drive",
    "size": "region per clone, bytes or % of the drive",
    "offset": "start of the region, bytes or % of the drive",
    "offset_align": "alignment of a % offset",
    "offset_increment": "clone k starts k x this later",
    "io_size": "bytes per clone (default: the region)",
    "number_ios": "requests per clone at most",
    "loops": "passes over the job's bytes",
    "runtime": "open loop: the end of the clone's requests; seconds by default",
    "time_based": "run for runtime rather than for size",
    "rate": "bytes/s per direction: open-loop arrival times",
    "rate_iops": "requests/s per direction (x the smallest block size, as fio): arrival times",
    "rate_process": "linear | poisson arrivals",
    "random_distribution": "random | zipf | pareto | normal | zoned | zoned_abs | sequence",
    "random_sequence_stride": "1: each pass of a sequence distribution moves on by its length",
    "norandommap": "draw random offsets with replacement",
    "randseed": "seed of the job's stream",
    "thinktime": "pause after thinktime_blocks requests; microseconds by default; open loop",
    "thinktime_blocks": "requests between pauses (default 1); caps the depth",
    "thinktime_spin": "part of thinktime spent spinning: the pause is still thinktime",
    "kb_base": "1024 | 1000: how unit prefixes read",
    "stonewall": "wait for the jobs before it to finish: a new group, run after them on the same drive "
                 "(alias wait_for_previous)",
    "steadystate": "criterion:limit (iops, iops_slope, bw, bw_slope, lat, lat_slope; a limit in % of "
                   "the window's mean or absolute) ending the group once met (alias ss; default "
                   "iops_slope:0.01%)",
    "steadystate_duration": "the rolling window the criterion is judged over; 0 (default): no detection "
                            "(alias ss_dur; seconds by default)",
    "steadystate_ramp_time": "time before the samples are collected (alias ss_ramp; seconds by default)",
    "steadystate_check_interval": "the period of the samples (alias ss_interval; default 1 s)",
    "verify": "a writing job reads back what it wrote, in the order written, once its writes end (fio's "
              "verify phase); the checksum method does not change the reads; verify=0: none",
    "do_verify": "0: no verify phase (default 1)",
    "ramp_time": "the job runs this long before its figures are counted (the requests issued before it warm "
                 "the drive and are left out of the group's report); seconds by default",
    "fill_device": "write (or read) to the end of the drive from offset, whatever size says: fio's end at "
                   "ENOSPC or the device's end (alias fill_fs)",
    "cmd_type": "nvme only: io_uring_cmd's NVMe pass-through sends the drive the same reads and writes "
                "(bsg, SCSI commands, refused)",
    "wait_for": "start once every clone of the named job is done: a new group after it, where it is the only "
                "job running before this one (later jobs waiting for it join the group)",
    "startdelay": "a timed job's requests start this late (a range lo-hi: each clone draws its delay); "
                  "seconds by default; refused in the closed loop",
    "flow": "weight of the job's clones in their flow: their shares of the flow's issues (closed loop)",
    "flow_id": "the flow a job's weight counts in (default 0)",
    "flow_sleep": "0 only (fio's default): a job over its share waits for the others without pausing",
    "verify_backlog": "verify while writing: each time the unverified writes reach a multiple of N, read "
                      "back the oldest (verify_backlog_batch of them, default N); the rest after the writes",
    "verify_backlog_batch": "blocks read back each time verify_backlog triggers (default verify_backlog)",
    "latency_target": "fio's search for the highest queue depth (1 .. iodepth) whose windows meet the "
                      "target; microseconds by default",
    "latency_window": "the window the target is judged over at each depth; microseconds by default",
    "latency_percentile": "share of a window's requests that must meet the target (default 100)",
    "latency_run": "1: keep adjusting the depth until the job ends, every window counted; 0 (default): "
                   "stop after one more window at the depth found, which alone is reported",
}
_HOST = "how fio issues I/O on the host; the engine models the device (as direct=1)"
_REPORT = "fio's reporting and logs; ssdx writes its own summary"
_DATA = "data content; ssdx models no data"
_NAME = "names and files; every job runs on the one modelled drive"
#: Options accepted without effect, with the reason.
IGNORED_BY_DESIGN: dict[str, str] = {
    **dict.fromkeys(("name", "description", "filename", "directory", "filename_format", "unique_filename",
                     "file_service_type", "openfiles", "create_serialize", "create_fsync", "create_on_open",
                     "allow_file_create", "allow_mounted_write", "fallocate", "unlink", "unlink_each_loop",
                     "invalidate", "lockfile"), _NAME),
    "new_group": "a new reporting group of jobs that run together; ssdx reports each stonewall group (the "
                 "jobs "
                 "that run together) as one, the requests the drive sees are the same",
    **dict.fromkeys(("group_reporting", "stats", "per_job_logs", "write_bw_log",
                     "write_lat_log", "write_iops_log", "write_hist_log", "log_avg_msec", "log_hist_msec",
                     "log_hist_coarseness", "log_max_value", "log_offset", "log_compression",
                     "log_unix_epoch", "log_alternate_epoch", "log_prio", "log_issue_time",
                     "percentile_list", "clat_percentiles", "lat_percentiles", "slat_percentiles",
                     "unified_rw_reporting", "disable_lat", "disable_clat", "disable_slat",
                     "disable_bw_measurement", "gtod_reduce", "gtod_cpu", "clocksource", "unit_base",
                     "significant_figures", "bwavgtime", "iopsavgtime"), _REPORT),
    **dict.fromkeys(("ioengine", "direct", "buffered", "thread", "iodepth_batch_submit", "iodepth_batch",
                     "iodepth_batch_complete_min", "iodepth_batch_complete", "iodepth_batch_complete_max",
                     "iodepth_low", "hipri", "fixedbufs", "registerfiles", "sqthread_poll",
                     "sqthread_poll_cpu", "nonvectored", "cpus_allowed", "cpus_allowed_policy", "cpumask",
                     "numa_cpu_nodes", "numa_mem_policy", "nice", "iomem", "mem", "iomem_align", "mem_align",
                     "hugepage-size", "userspace_reap", "continue_on_error", "ignore_error",
                     "error_dump", "libblkio_driver", "libblkio_path", "libblkio_pre_connect_props",
                     "libblkio_pre_start_props", "libblkio_vectored", "libblkio_write_zeroes_on_trim",
                     "libblkio_wait_mode", "libblkio_force_enable_completion_eventfd", "gpu_dev_ids",
                     "cuda_io", "rocm_io"), _HOST),
    **dict.fromkeys(("zero_buffers", "refill_buffers", "scramble_buffers", "buffer_pattern",
                     "buffer_compress_percentage", "buffer_compress_chunk", "dedupe_percentage",
                     "dedupe_mode", "dedupe_global", "dedupe_working_set_percentage"), _DATA),
    "io_submit_mode": "whether fio's job threads or a pool of its threads submit the I/O (inline, offload); "
                      "ssdx issues each request at its rate's time either way",
    **dict.fromkeys(("rate_min", "rate_iops_min", "rate_cycle"),
                    "fio's check that ends a job running below this rate (averaged over rate_cycle ms); it "
                    "does not shape the requests: ssdx runs the job whole and reports the rate it reached"),
    **dict.fromkeys(("verify_pattern", "verify_interval", "verify_offset", "verify_fatal", "verify_dump",
                     "verify_async", "verify_async_cpus", "verify_header_seed", "verify_write_sequence"),
                    "what a verify read checks in the data and how fio reports a mismatch; the reads are "
                    "the same"),
    **dict.fromkeys(("prio", "prioclass", "priohint", "cmdprio_percentage", "cmdprio_class", "cmdprio",
                     "cmdprio_hint", "cmdprio_bssplit"),
                    "an I/O priority: the host's I/O schedulers order by it and ATA (NCQ priority) and SCSI "
                    "(command duration limits) drives receive it, but an NVMe command has no priority field "
                    "(NVMe arbitrates submission queues, not commands): the engine's NVMe drive sees the "
                    "same requests"),
    "atomic": "torn-write protection (RWF_ATOMIC): the kernel checks a write's size and alignment against "
              "the device's atomic-write limits and sends an ordinary write, which an NVMe drive completes "
              "atomically within its AWUPF; the requests are the same",
    "randrepeat": "ssdx streams are always repeatable",
    "allrandrepeat": "ssdx streams are always repeatable",
    "random_generator": "fio's generator; ssdx draws its own (random map: a keyed permutation)",
}
