import pytest

from ssdx import catalog
from ssdx.units import KIB, gbit_die_to_bytes


@pytest.mark.parametrize(
    "name, t_prog, t_read, t_erase, block_mb, unit",
    [  # Fukuchi et al. Table 1: us/page, us/page, us/block, MB, write unit bytes
        ("2d_fg_mlc", 1185, 44, 3300, 4.2, 16 * KIB),
        ("2d_fg_tlc", 2180, 87, 3200, 4.2, "block"),
        ("3d_fg_tlc", 1900, 102, 7500, 25.0, "block"),
        ("3d_ct_tlc", 1083, 76, 4300, 9.4, 48 * KIB),
    ],
)
def test_table1_values(name, t_prog, t_read, t_erase, block_mb, unit):
    n = catalog.nand(name)
    assert (n.t_prog_us, n.t_read_us, n.t_erase_us) == (t_prog, t_read, t_erase)
    assert n.block_bytes / 1e6 == pytest.approx(block_mb, rel=0.01)
    expected_unit = n.block_bytes if unit == "block" else unit
    assert n.write_unit_bytes == expected_unit
    assert n.page_bytes == 16 * KIB


def test_interfaces_match_reference_usable_rates():
    # docs/references.md, physical anchors: SATA III ~550 MB/s, PCIe 3.0 x4 ~3.5 GB/s, PCIe 4.0 x4 ~7 GB/s.
    assert catalog.interface("sata3").usable_bytes_per_s == pytest.approx(550e6, rel=0.03)
    assert catalog.interface("pcie3x4").usable_bytes_per_s == pytest.approx(3.5e9, rel=0.03)
    assert catalog.interface("pcie4x4").link_bytes_per_s == pytest.approx(7.88e9, rel=0.01)
    assert catalog.interface("pcie4x4").usable_bytes_per_s == pytest.approx(7.0e9, rel=0.03)
    assert catalog.interface("pcie5x4").usable_bytes_per_s == pytest.approx(
        2 * catalog.interface("pcie4x4").usable_bytes_per_s)


def test_pslc_block_holds_one_bit_per_cell():
    for name in ("tlc", "qlc", "2d_fg_mlc"):
        base = catalog.nand(name)
        p = catalog.pslc(base)
        assert p.bits_per_cell == 1
        assert p.block_bytes == pytest.approx(base.block_bytes / base.bits_per_cell, rel=0.01)
        assert p.t_prog_us < base.t_prog_us


def test_unknown_names_list_known_ones():
    with pytest.raises(KeyError, match="3d_ct_tlc"):
        catalog.nand("4d_tlc")
    with pytest.raises(KeyError, match="pcie4x4"):
        catalog.interface("usb")


def test_die_density_is_binary():
    assert gbit_die_to_bytes(512) == pytest.approx(68.72e9, rel=1e-3)
    assert catalog.SCM.t_read_ns_per_sector == 100.0


def test_aldrin_nand_program_times_are_the_documented_fit():
    # ssdx/presets.py: 32 dies x 4 planes x 16 KiB programmed at the review's measured speeds
    from ssdx.presets import fit_program_time_us

    n = catalog.nand("ymtc_cdt1b")
    assert n.t_prog_slc_us == pytest.approx(fit_program_time_us(6579, 32, 4, 16 * KIB), rel=1e-4)
    assert n.t_prog_us == pytest.approx(fit_program_time_us(2159, 32, 4, 16 * KIB), rel=1e-4)


def test_table1_order_is_the_papers():
    assert catalog.TABLE1_NAND == ("2d_fg_mlc", "2d_fg_tlc", "3d_fg_tlc", "3d_ct_tlc")
    assert all(name in catalog.NAND for name in catalog.TABLE1_NAND)


def test_only_the_sata_link_is_sata():
    assert [n for n, i in catalog.INTERFACES.items() if i.sata] == ["sata3"]
