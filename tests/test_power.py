"""Power calibration arithmetic of the presets (ssdx.presets.fit_power) against the preset files."""

import pytest

from ssdx import catalog, presets


def test_aldrin_power_block_is_the_documented_fit():
    d = presets.drive("aldrin_pro_2tb")
    p = d["power"]
    die = catalog.nand(d["nand"])
    fit = presets.fit_power(7.3, 5.0, 6579.0, 2159.0, d["channels"] * d["dies_per_channel"], die.die_active_w,
                            p["idle_w"], catalog.interface(d["interface"]).link_pj_per_bit,
                            p["nand_io_pj_per_bit"])
    assert p["ctrl_active_w"] == pytest.approx(fit["ctrl_active_w"], abs=1e-3)
    assert p["datapath_nj_per_byte"] == pytest.approx(fit["datapath_nj_per_byte"], abs=1e-3)


def test_fit_power_inverts_the_affine_model():
    # a drive with known parameters: P = idle + ctrl + dies*die_w + (datapath + link + io) * x
    idle, ctrl, dies, die_w, dp, link, io = 1.2, 0.7, 16, 0.08, 0.3, 5.0, 4.0
    e = dp * 1e-9 + (link + io) * 8e-12

    def power(mb_s):
        return idle + ctrl + dies * die_w + e * mb_s * 1e6

    fit = presets.fit_power(power(3000.0), power(1000.0), 3000.0, 1000.0, dies, die_w, idle, link, io)
    assert fit["ctrl_active_w"] == pytest.approx(ctrl, rel=1e-9)
    assert fit["datapath_nj_per_byte"] == pytest.approx(dp, rel=1e-9)
