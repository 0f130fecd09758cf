"""Bad MQSim input files and ``mqsim.*`` values: a clear error naming the file, the element and the line
(or the field, the value and the rule), exit status 2 from the CLI, and nothing run or written.

The files start from the shipped examples (``examples/mqsim``); the rules are MQSim's own where it has
one (its sources, ``src/exec/Host_System.cpp``, ``src/exec/IO_Flow_Parameter_Set.cpp``,
``src/host/IO_Flow_Synthetic.cpp``, ``src/host/IO_Flow_Base.cpp``) and ssdx's where its engine has a
limit (``ssdx.models.engine.params.MAX_SLOTS``, ``MAP_UNIT_BYTES``).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import compose_config
from test_cli import ssdx

from ssdx.models.engine import mqsim_job
from ssdx.models.engine.params import MAP_UNIT_BYTES, MAX_SLOTS
from ssdx.params import ConfigError
from ssdx.workloads import mqsim_xml
from ssdx.workloads.mqsim_xml import MAX_REQUEST_SECTORS, STOI_MAX, MqsimXmlError

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "mqsim"
SSDCONFIG = EXAMPLES / "ssdconfig.xml"

#: a synthetic flow's elements, as the first flow of examples/mqsim/workload.xml gives them
FLOW = {"Initial_Occupancy_Percentage": "0", "Working_Set_Percentage": "100",
        "Synthetic_Generator_Type": "QUEUE_DEPTH", "Read_Percentage": "100",
        "Address_Distribution": "RANDOM_UNIFORM", "Generated_Aligned_Addresses": "true",
        "Address_Alignment_Unit": "8", "Request_Size_Distribution": "FIXED", "Average_Request_Size": "8",
        "Variance_Request_Size": "0", "Seed": "798", "Average_No_of_Reqs_in_Queue": "16", "Bandwidth": "0",
        "Stop_Time": "0", "Total_Requests_To_Generate": "200"}


def _flow(**values: object) -> str:
    body = "".join(f"\t\t\t<{k}>{v}</{k}>\n" for k, v in {**FLOW, **values}.items())
    return f"\t\t<IO_Flow_Parameter_Set_Synthetic>\n{body}\t\t</IO_Flow_Parameter_Set_Synthetic>\n"


def _workload(tmp_path: Path, *scenarios: list[str]) -> Path:
    body = "".join("\t<IO_Scenario>\n" + "".join(s) + "\t</IO_Scenario>\n" for s in scenarios)
    p = tmp_path / "workload.xml"
    p.write_text(f'<?xml version="1.0"?>\n<MQSim_IO_Scenarios>\n{body}</MQSim_IO_Scenarios>\n')
    return p


def _ssdconfig(tmp_path: Path, element: str, value: str) -> Path:
    """The example drive with ``element``'s value replaced."""
    text = SSDCONFIG.read_text()
    start = text.index(f"<{element}>")
    end = text.index(f"</{element}>", start)
    p = tmp_path / "ssdconfig.xml"
    p.write_text(text[:start] + f"<{element}>{value}" + text[end:])
    return p


def _line(path: Path, element: str, nth: int = 0) -> int:
    """The line of the ``nth`` ``<element>`` of ``path``."""
    text = path.read_text()
    at = -1
    for _ in range(nth + 1):
        at = text.index(f"<{element}>", at + 1)
    return text[:at].count("\n") + 1


def _compose(*overrides: str) -> dict:
    """The composed configuration of ``ssdx experiment=mqsim OVERRIDES`` (plain containers)."""
    return compose_config("experiment=mqsim", *overrides)


def _cli(tmp_path: Path, *args: str):
    out = tmp_path / "run"
    r = ssdx("experiment=mqsim", *args, f"hydra.run.dir={out}")
    return r, out


def _refused_by_cli(r, out: Path) -> None:
    assert r.returncode == 2, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    assert not (out / "summary.json").exists()


# ------------------------------------------------------------------------- 1: Bandwidth below one request/s


def test_bandwidth_below_one_request_a_second_is_refused_at_its_element(tmp_path: Path) -> None:
    """MQSim's mean gap is 10^9 / ((Bandwidth / 512) / Average_Request_Size) ns in integers: below
    512 x Average_Request_Size bytes/s it divides by zero (ssdx: an infinite gap, NaN figures)."""
    w = _workload(tmp_path, [_flow(Synthetic_Generator_Type="BANDWIDTH", Bandwidth=1)])
    with pytest.raises(MqsimXmlError) as e:
        mqsim_xml.parse_workload(w)
    assert (e.value.path, e.value.line, e.value.element) == (str(w), _line(w, "Bandwidth"), "Bandwidth")
    assert e.value.field == "mqsim.workload"
    assert "Bandwidth >= 512 x Average_Request_Size = 4096 bytes/s" in str(e.value)
    w = _workload(tmp_path, [_flow(Synthetic_Generator_Type="BANDWIDTH", Bandwidth=4095)])
    with pytest.raises(MqsimXmlError, match="4096 bytes/s"):
        mqsim_xml.parse_workload(w)
    # the least that works: one request a second
    w = _workload(tmp_path, [_flow(Synthetic_Generator_Type="BANDWIDTH", Bandwidth=4096)])
    assert mqsim_xml.parse_workload(w)[0].flows[0].mean_interarrival_s == 1.0


def test_cli_refuses_a_bandwidth_too_low_before_running(tmp_path: Path) -> None:
    w = _workload(tmp_path, [_flow(Synthetic_Generator_Type="BANDWIDTH", Bandwidth=1)])
    r, out = _cli(tmp_path, f"mqsim.workload={w}")
    _refused_by_cli(r, out)
    assert "<Bandwidth>" in r.stderr and f"{w}:{_line(w, 'Bandwidth')}" in r.stderr
    assert "mqsim.workload=" in r.stderr


# ------------------------------------------------------------------------- 2: request sizes


def test_variance_beyond_mqsims_parser_is_refused_at_its_element(tmp_path: Path) -> None:
    """MQSim reads Variance_Request_Size with std::stoi: above INT_MAX it refuses the file."""
    w = _workload(tmp_path, [_flow(Request_Size_Distribution="NORMAL", Variance_Request_Size=2**32)])
    with pytest.raises(MqsimXmlError) as e:
        mqsim_xml.parse_workload(w)
    assert (e.value.line, e.value.element) == (_line(w, "Variance_Request_Size"), "Variance_Request_Size")
    assert str(STOI_MAX) in str(e.value) and "stoi" in str(e.value)
    # a sector count MQSim's 16-bit command field cannot carry
    w = _workload(tmp_path, [_flow(Average_Request_Size=MAX_REQUEST_SECTORS + 1)])
    with pytest.raises(MqsimXmlError) as e:
        mqsim_xml.parse_workload(w)
    assert (e.value.line, e.value.element) == (_line(w, "Average_Request_Size"), "Average_Request_Size")


@pytest.mark.parametrize("seed", [-(2**31), -1, STOI_MAX])
def test_a_seed_is_what_mqsims_int_holds(tmp_path: Path, seed: int) -> None:
    """MQSim reads a flow's Seed with std::stoi into an int: every 32-bit value, negative ones included,
    is taken (and gives a stream of its own); one beyond is refused at its element, naming the rule."""
    w = _workload(tmp_path, [_flow(Seed=seed)], [_flow(Seed=798)])
    (a,), (b,) = (sc.flows for sc in mqsim_xml.parse_workload(w))
    assert a.seed == seed
    draw = [mqsim_job._synthetic(f, 0, 10**9, 50, 50, [], "flow").offset for f in (a, b)]
    assert (draw[0] != draw[1]).any()
    for beyond in (STOI_MAX + 1, -(2**31) - 1):
        w = _workload(tmp_path, [_flow(Seed=beyond)])
        with pytest.raises(MqsimXmlError) as e:
            mqsim_xml.parse_workload(w)
        assert (e.value.line, e.value.element) == (_line(w, "Seed"), "Seed")
        assert "stoi" in str(e.value) and "32-bit" in str(e.value)


def test_normal_sizes_are_bounded_as_mqsims_command_carries_them(tmp_path: Path) -> None:
    """The largest variance MQSim takes: sizes of ceil(N(8, 2^31 - 1)) sectors, at least 1 (MQSim's
    ``LBA_count <= 0`` rule) and at most the 65,535 sectors its NVMe command carries, with a warning."""
    w = _workload(tmp_path, [_flow(Request_Size_Distribution="NORMAL", Variance_Request_Size=STOI_MAX)])
    fl = mqsim_xml.parse_workload(w)[0].flows[0]
    warnings: list[str] = []
    c = mqsim_job._synthetic(fl, 0, 10**9, 200, 200, warnings, "flow")
    assert len(c) == 200
    assert c.size.min() >= 512 and c.size.max() <= MAX_REQUEST_SECTORS * 512
    assert (c.size == 512).any() and (c.size == MAX_REQUEST_SECTORS * 512).any()  # both bounds reached
    assert any(f"above {MAX_REQUEST_SECTORS} sectors" in x for x in warnings)


def test_a_request_larger_than_the_drive_is_refused_at_its_element(tmp_path: Path, monkeypatch) -> None:
    """Checked on the drive before any scenario runs (FIXED) or where the sizes are drawn (NORMAL);
    ssdx's drives hold at least 1 GB, so a tiny capacity stands in for the drive here."""
    monkeypatch.setattr(mqsim_job, "capacity_bytes", lambda cfg: 64 * 512.0)
    w = _workload(tmp_path, [_flow(Average_Request_Size=8)], [_flow(Average_Request_Size=65)])
    scenarios = mqsim_xml.parse_workload(w)
    with pytest.raises(MqsimXmlError) as e:
        mqsim_job.check_scenarios({}, scenarios)
    assert (e.value.line, e.value.element) == (_line(w, "Average_Request_Size", 1), "Average_Request_Size")
    assert e.value.field == "mqsim.workload" and "capacity of 32768 bytes" in str(e.value)
    w = _workload(tmp_path, [_flow(Request_Size_Distribution="NORMAL", Variance_Request_Size=10**6)])
    (sc,) = mqsim_xml.parse_workload(w)
    mqsim_job.check_scenarios({}, [sc])  # a NORMAL size is known only when drawn
    with pytest.raises(MqsimXmlError) as e:
        mqsim_job.scenario_streams({"mqsim": {}}, sc, 0, [])
    assert (e.value.line, e.value.element) == (_line(w, "Variance_Request_Size"), "Variance_Request_Size")


def test_a_trace_flow_too_large_for_the_drive_is_refused_naming_its_largest_request(tmp_path: Path) -> None:
    trace = tmp_path / "t.trace"
    trace.write_text("0 0 0 8 1\n1000 0 8 80 1\n2000 0 16 8 1\n3000 0 24 100 1\n4000 0 32 100 1\n")
    w = tmp_path / "workload.xml"
    w.write_text('<?xml version="1.0"?>\n<MQSim_IO_Scenarios><IO_Scenario>\n'
                 "<IO_Flow_Parameter_Set_Trace_Based>\n"
                 f"<File_Path>{trace}</File_Path>\n"
                 "<Percentage_To_Be_Executed>100</Percentage_To_Be_Executed>\n"
                 "<Relay_Count>1</Relay_Count>\n<Time_Unit>NANOSECOND</Time_Unit>\n"
                 "</IO_Flow_Parameter_Set_Trace_Based>\n</IO_Scenario></MQSim_IO_Scenarios>\n")
    (sc,) = mqsim_xml.parse_workload(w)
    fl = sc.flows[0]
    c = mqsim_job._trace(fl, 0, 10**6, 100, 100, [], "flow")
    mqsim_job._fits(fl, c.size, c.line, 100 * 512.0)  # every request fits
    with pytest.raises(MqsimXmlError) as e:
        mqsim_job._fits(fl, c.size, c.line, 64 * 512.0)
    assert e.value.element == "File_Path"
    assert f"the request of line 4 of {trace} is 51200 bytes, larger than the drive's capacity of 32768 " \
           "bytes" in str(e.value)


# ------------------------------------------------------------------------- 3: ssdconfig values


@pytest.mark.parametrize(("element", "value"), [
    ("Page_Read_Latency_LSB", "inf"), ("Channel_Transfer_Rate", "inf"), ("Block_Erase_Latency", "-inf"),
    ("PCIe_Lane_Bandwidth", "nan"), ("Overprovisioning_Ratio", "nan")])
def test_non_finite_numbers_are_refused_at_their_element(tmp_path: Path, element: str, value: str) -> None:
    p = _ssdconfig(tmp_path, element, value)
    with pytest.raises(MqsimXmlError) as e:
        mqsim_xml.parse_ssdconfig(p)
    assert (e.value.path, e.value.line, e.value.element) == (str(p), _line(p, element), element)
    assert e.value.field == "mqsim.ssdconfig"


@pytest.mark.parametrize("page", [1000, 512, 2048, 6144, 2 << 20])
def test_a_page_ssdx_cannot_map_is_refused_at_page_capacity(tmp_path: Path, page: int) -> None:
    p = _ssdconfig(tmp_path, "Page_Capacity", str(page))
    with pytest.raises(MqsimXmlError) as e:
        mqsim_xml.parse_ssdconfig(p)
    assert (e.value.line, e.value.element) == (_line(p, "Page_Capacity"), "Page_Capacity")
    assert f"whole number of them, from {MAP_UNIT_BYTES}" in str(e.value)
    assert "write_unit" not in str(e.value)


@pytest.mark.parametrize("page", [4096, 12288, 32768])
def test_a_page_of_whole_mapping_units_is_taken_as_the_program_unit(tmp_path: Path, page: int) -> None:
    """MQSim programs a plane one page at a time: the write unit is the page, whatever the catalog type's."""
    o, _ = mqsim_xml.parse_ssdconfig(_ssdconfig(tmp_path, "Page_Capacity", str(page)))
    assert o["nand.page_kib"] == o["nand.write_unit_kib"] == page / 1024


def test_a_value_ssdx_refuses_names_the_element_file_and_line(tmp_path: Path) -> None:
    """An override the drive file produced that breaks one of ssdx's rules is reported at the element it
    came from; set on the command line, the field is the configuration's and nothing is refused."""
    p = _ssdconfig(tmp_path, "Flash_Channel_Count", "4096")
    cfg = _compose(f"mqsim.ssdconfig={p}")
    sources: dict = {}
    run_cfg, scenarios, overrides, _ = mqsim_job.load(cfg, frozenset(), sources)
    with pytest.raises(MqsimXmlError) as e:
        mqsim_job.check_loaded(run_cfg, scenarios, overrides, sources, p)
    assert (e.value.path, e.value.line, e.value.element) == (str(p), _line(p, "Flash_Channel_Count"),
                                                             "Flash_Channel_Count")
    assert e.value.field == "mqsim.ssdconfig"
    assert "drive.channels = 4096" in str(e.value) and "integer 1 <= x <= 64" in str(e.value)
    # 10^13 ns = 10^10 us per erase, past ssdx's 10^6 us; nand.t_erase_us given keeps the configuration's
    p = _ssdconfig(tmp_path, "Block_Erase_Latency", "1e13")
    cfg = _compose(f"mqsim.ssdconfig={p}")
    sources = {}
    run_cfg, scenarios, overrides, _ = mqsim_job.load(cfg, frozenset(), sources)
    with pytest.raises(MqsimXmlError) as e:
        mqsim_job.check_loaded(run_cfg, scenarios, overrides, sources, p)
    assert (e.value.line, e.value.element) == (_line(p, "Block_Erase_Latency"), "Block_Erase_Latency")
    assert "set nand.t_erase_us on the command line" in str(e.value)
    sources = {}
    run_cfg, scenarios, overrides, _ = mqsim_job.load(cfg, frozenset({"nand.t_erase_us"}), sources)
    mqsim_job.check_loaded(run_cfg, scenarios, overrides, sources, p)
    assert run_cfg["nand"]["t_erase_us"] == cfg["nand"]["t_erase_us"]
    # a field computed from several elements names them all: the mean read time of MLC's LSB and MSB pages
    p = _ssdconfig(tmp_path, "Page_Read_Latency_LSB", "4e12")
    sources = {}
    run_cfg, scenarios, overrides, _ = mqsim_job.load(_compose(f"mqsim.ssdconfig={p}"), frozenset(), sources)
    with pytest.raises(MqsimXmlError) as e:
        mqsim_job.check_loaded(run_cfg, scenarios, overrides, sources, p)
    assert (e.value.line, e.value.element) == (_line(p, "Page_Read_Latency_LSB"), "Page_Read_Latency_LSB")
    assert "nand.t_read" in str(e.value)
    assert f"<Page_Read_Latency_MSB> = '75000' (line {_line(p, 'Page_Read_Latency_MSB')})" in str(e.value)


def test_cli_names_the_drive_files_element_for_a_value_ssdx_refuses(tmp_path: Path) -> None:
    p = _ssdconfig(tmp_path, "Flash_Channel_Count", "4096")
    r, out = _cli(tmp_path, f"mqsim.ssdconfig={p}")
    _refused_by_cli(r, out)
    assert "<Flash_Channel_Count>" in r.stderr and f"{p}:{_line(p, 'Flash_Channel_Count')}" in r.stderr
    assert "drive.channels = 4096" in r.stderr and "mqsim.ssdconfig=" in r.stderr


# ------------------------------------------------------------------------- 4: queue depths past the engine


def test_queue_depths_past_the_engines_limit_are_refused_at_their_element(tmp_path: Path) -> None:
    """A closed-loop scenario keeps the sum of its flows' depths outstanding; the engine tracks MAX_SLOTS."""
    w = _workload(tmp_path, [_flow(Average_No_of_Reqs_in_Queue=65535)])
    with pytest.raises(MqsimXmlError) as e:
        mqsim_xml.parse_workload(w)
    assert (e.value.path, e.value.line, e.value.element) == (
        str(w), _line(w, "Average_No_of_Reqs_in_Queue"), "Average_No_of_Reqs_in_Queue")
    assert e.value.field == "mqsim.workload"
    assert f"at most {MAX_SLOTS}" in str(e.value) and "sum" in str(e.value)
    assert "workload.queue_depth=" not in str(e.value)
    # two flows within the limit each, past it together: both named
    half = MAX_SLOTS // 2 + 1
    w = _workload(tmp_path, [_flow(Average_No_of_Reqs_in_Queue=half)] * 2)
    with pytest.raises(MqsimXmlError) as e:
        mqsim_xml.parse_workload(w)
    for k in (0, 1):
        assert f"{half} at line {_line(w, 'Average_No_of_Reqs_in_Queue', k)}" in str(e.value)
    w = _workload(tmp_path, [_flow(Average_No_of_Reqs_in_Queue=MAX_SLOTS // 2)] * 2)
    assert sum(f.queue_depth for f in mqsim_xml.parse_workload(w)[0].flows) == MAX_SLOTS
    # an open-loop flow does not read its depth
    w = _workload(tmp_path, [_flow(Synthetic_Generator_Type="BANDWIDTH", Bandwidth=10**6,
                                   Average_No_of_Reqs_in_Queue=65535)])
    mqsim_xml.parse_workload(w)


# ------------------------------------------------------------------------- 5: the field names the file's key


def test_errors_name_the_files_configuration_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.xml"
    bad.write_text("<MQSim_IO_Scenarios><IO_Scenario>\n</MQSim_IO_Scenarios>\n")
    for parse, key in ((mqsim_xml.parse_ssdconfig, "mqsim.ssdconfig"), (mqsim_xml.parse_workload,
                                                                         "mqsim.workload")):
        for path, what in ((bad, "not well-formed"), (tmp_path, "is a directory"),
                           (tmp_path / "missing.xml", "no such file")):
            with pytest.raises(MqsimXmlError, match=what) as e:
                parse(path)
            assert e.value.field == key and f"e.g. {key}=..." in str(e.value)
            assert "e.g. mqsim=" not in str(e.value)
    w = _workload(tmp_path, [_flow(Read_Percentage=150)])
    with pytest.raises(MqsimXmlError) as e:
        mqsim_xml.parse_workload(w)
    assert e.value.field == "mqsim.workload" and e.value.line == _line(w, "Read_Percentage")


# ------------------------------------------------------------------------- 6: mqsim.closed_loop_passes


@pytest.mark.parametrize(("key", "value"), [("closed_loop_passes", 0), ("closed_loop_passes", -1),
                                            ("requests_per_flow", 0)])
def test_mqsim_values_out_of_range_are_refused_before_anything_is_read(key: str, value: int) -> None:
    cfg = {"mqsim": {"ssdconfig": "/nonexistent/ssdconfig.xml", key: value}}
    with pytest.raises(ConfigError) as e:
        mqsim_job.load(cfg)
    assert (e.value.field, e.value.value) == (f"mqsim.{key}", value)
    assert not isinstance(e.value, MqsimXmlError)
    fields = {f.name: f for f in mqsim_job.conf_fields()}
    assert fields["mqsim.closed_loop_passes"].lo == 1 and math.isinf(fields["mqsim.closed_loop_passes"].hi)


def test_run_scenario_refuses_passes_below_one(tmp_path: Path) -> None:
    """Two closed-loop flows re-weighted over ``closed_loop_passes`` passes: at least one must run."""
    w = _workload(tmp_path, [_flow(), _flow(Average_No_of_Reqs_in_Queue=4)])
    (sc,) = mqsim_xml.parse_workload(w)
    with pytest.raises(ConfigError) as e:
        mqsim_job.run_scenario({"mqsim": {"closed_loop_passes": 0}}, sc, 0, [])
    assert e.value.field == "mqsim.closed_loop_passes"


def test_cli_refuses_closed_loop_passes_below_one(tmp_path: Path) -> None:
    r, out = _cli(tmp_path, "mqsim.closed_loop_passes=0")
    _refused_by_cli(r, out)
    assert "mqsim.closed_loop_passes" in r.stderr and "x >= 1" in r.stderr
    assert "UnboundLocalError" not in r.stderr


# ------------------------------------------------------------------------- a trace flow with no request


@pytest.mark.parametrize(("lines", "percentage"), [("", 100), ("0 0 0 8 1\n1000 0 8 8 1\n", 0)])
def test_a_trace_flow_that_selects_no_request_is_refused_naming_its_flow(tmp_path: Path, lines: str,
                                                                        percentage: int) -> None:
    """An empty trace, or a Percentage_To_Be_Executed that keeps none of it: the flow is named (no engine
    run of an empty stream)."""
    trace = tmp_path / "t.trace"
    trace.write_text(lines)
    w = tmp_path / "workload.xml"
    w.write_text('<?xml version="1.0"?>\n<MQSim_IO_Scenarios><IO_Scenario>\n'
                 "<IO_Flow_Parameter_Set_Trace_Based>\n"
                 f"<File_Path>{trace}</File_Path>\n"
                 f"<Percentage_To_Be_Executed>{percentage}</Percentage_To_Be_Executed>\n"
                 "<Relay_Count>1</Relay_Count>\n<Time_Unit>NANOSECOND</Time_Unit>\n"
                 "</IO_Flow_Parameter_Set_Trace_Based>\n</IO_Scenario></MQSim_IO_Scenarios>\n")
    (sc,) = mqsim_xml.parse_workload(w)
    cfg = _compose(f"mqsim.workload={w}")
    with pytest.raises(ConfigError, match="selects no request") as e:
        mqsim_job.run_scenario(cfg, sc, 0, [])
    assert e.value.field == "mqsim.workload" and "flow 0 (line 3)" in str(e.value)


def test_a_page_size_from_the_command_line_takes_the_files_write_unit_with_it() -> None:
    """The drive file's write unit is its page; a command-line page replaces both (a 16 KiB page with the
    file's 8 KiB unit would be half a page), and only the page, which the user set, is warned of."""
    cfg = _compose("nand.page_kib=16")
    run_cfg, _, overrides, warnings = mqsim_job.load(cfg, frozenset({"nand.page_kib"}))
    assert "nand.page_kib" not in overrides and overrides["nand.write_unit_kib"] == 16
    assert run_cfg["nand"]["page_kib"] == run_cfg["nand"]["write_unit_kib"] == 16
    assert any(w.startswith("nand.page_kib = 16.0 from the command line") for w in warnings)
    assert not any(w.startswith("nand.write_unit_kib") for w in warnings)
    _, _, overrides, _ = mqsim_job.load(_compose())
    assert overrides["nand.write_unit_kib"] == overrides["nand.page_kib"] == 8
