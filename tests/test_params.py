import jax
import numpy as np
import pytest

from ssdx import params, presets
from ssdx.params import ConfigError


def _cols(**over):
    d = presets.drive("aldrin_pro_2tb")
    w = presets.workload("seq_fill")
    cols = params.columns_from_config(d, w)
    for k, v in over.items():
        cols[k.replace("__", ".")] = np.asarray([v])
    return cols


@pytest.mark.parametrize(
    "field, value, rule_part",
    [
        ("drive.channels", -1, "integer 1 <= x <= 64"),
        ("drive.channels", 2.5, "integer 1 <= x <= 64"),
        ("drive.dies_per_channel", 0, "integer 1 <= x <= 64"),
        ("drive.die_gbit", float("inf"), "1 <= x <= 100000"),
        ("drive.bus_mts", 1e-50, "10 <= x <= 100000"),
        ("nand.t_prog_us", float("inf"), "0.01 <= x <= 1e6 us"),
        ("nand.t_prog_slc_us", 1e40, "0.01 <= x <= 1e6 us"),
        ("drive.user_capacity_gb", 1e-40, "1 <= x <= 1e+06"),
        ("drive.nand", "4d_tlc", "must be one of"),
        ("drive.interface", "usb", "must be one of"),
        ("drive.slc_mode", "turbo", "must be one of"),
        ("drive.reserve_fraction", 0.7, "0 <= x < 0.5"),
        ("drive.fold_efficiency", 0.0, "0 < x <= 1"),
        ("workload.prefill_fraction", 1.0, "0 <= x < 1"),
        ("workload.block_kib", -4, "0.5 <= x <= 1e+06"),
        ("workload.block_kib", float("nan"), "0.5 <= x <= 1e+06"),
        ("drive.user_capacity_gb", 4000.0, "must fit in raw NAND"),
        ("drive.bus_mts", "fast", "must be a number"),
    ],
)
def test_bad_values_name_field_value_and_rule(field, value, rule_part):
    cols = _cols(**{field.replace(".", "__"): value})
    with pytest.raises(ConfigError) as e:
        params.build(cols)
    assert e.value.field == field
    assert rule_part in e.value.rule
    msg = str(e.value)
    assert field in msg and str(value) in msg and "nothing was computed" in msg


def test_pslc_mode_needs_multibit_nand():
    with pytest.raises(ConfigError, match="multi-bit"):
        params.build(_cols(drive__nand="slc", drive__slc_mode="dynamic"))
    params.build(_cols(drive__nand="slc", drive__slc_mode="pure_native"))


def test_static_cache_counts_against_raw():
    # 2000 GB user + 3 x 70 GB static pSLC > 2199 GB x 0.995 usable raw
    with pytest.raises(ConfigError, match="static"):
        params.build(_cols(drive__slc_mode="static", drive__static_slc_gb=70.0))
    params.build(_cols(drive__slc_mode="static", drive__static_slc_gb=50.0))


def test_valid_rows_reports_per_configuration():
    cols = params.broadcast_columns(_cols(), 4)
    cols["drive.channels"] = np.array([8, -1, 8, 0])
    cols["drive.user_capacity_gb"] = np.array([2000.0, 2000.0, 9000.0, 2000.0])
    ok, broken = params.valid_rows(cols)
    assert ok.tolist() == [True, False, False, False]
    by_field = {b["field"]: b["configurations"] for b in broken}
    assert by_field["drive.channels"] == 2
    assert by_field["drive.user_capacity_gb"] >= 1


def test_pytrees_stack_and_index():
    cols = params.broadcast_columns(_cols(), 3)
    cols["drive.dies_per_channel"] = np.array([1, 2, 4])
    cols["drive.user_capacity_gb"] = np.full(3, 500.0)
    drive, workload = params.build(cols)
    assert drive.dies.shape == (3,)
    leaves = jax.tree_util.tree_leaves(drive)
    assert all(x.shape == (3,) for x in leaves)
    one = params.index(drive, 2)
    assert float(one.dies) == 32.0
    assert float(one.raw_bytes) == pytest.approx(2199.02e9, rel=1e-4)
    assert float(one.nand.bits_per_cell) == 3.0


@pytest.mark.parametrize("n, collide", [(100, False), (10000, False), (10000, True)])
def test_codes_factorise_like_np_unique_on_every_path(n, collide, monkeypatch):
    """Short columns are sorted by ``np.unique``; long string columns are factorised by a hash of their
    bytes, checked entry by entry, and when two strings share a hash (forced here: every weight 0) by
    ``pd.factorize``: each way the same distinct values in the same order, the same indices, the same
    dtype."""
    from ssdx import params
    from ssdx.params import Codes

    rng = np.random.default_rng(n)
    a = rng.choice(["tlc", "qlc", "3d_ct_tlc", "", "ymtc_cdt1b", "é_type"], n).astype(str)
    if collide:
        monkeypatch.setattr(params, "_WORD_WEIGHTS", np.zeros(64, np.uint64))
    if n > 4096:
        assert (params._factorize_fixed_width(a) is None) == collide
    c = Codes(a)
    uniq, inv = np.unique(a, return_inverse=True)
    np.testing.assert_array_equal(c.uniq, uniq)
    np.testing.assert_array_equal(c.inv, inv)
    assert c.uniq.dtype == uniq.dtype and (c.uniq[c.inv] == a).all()
    assert list(c.map(len, int)) == [len(x) for x in a]


@pytest.mark.parametrize("kind", ["U3", "U10", "U11", "S5", "many"])
def test_hashed_factorisation_equals_np_unique_for_any_width(kind):
    """The byte hash of fixed-width strings, whole 8-byte words or zero-padded to them, unicode or bytes,
    few or thousands of distinct values (trailing NULs are not part of a NumPy string)."""
    from ssdx.params import _factorize_fixed_width

    rng = np.random.default_rng(len(kind))
    pool = {"U3": ["ab", "abc", "b", "", "é"], "U10": ["tlc", "qlc", "ymtc_cdt1b", "3d_ct_tlc"],
            "U11": ["pure_native", "dynamic", "static", "a\x00"], "S5": [b"ab", b"abcde", b"x", b""],
            "many": [f"v{i}" for i in range(3000)]}[kind]
    a = np.asarray(rng.choice(np.asarray(pool), 20000))
    got = _factorize_fixed_width(a)
    uniq, inv = np.unique(a, return_inverse=True)
    assert got is not None
    np.testing.assert_array_equal(got[0], uniq)
    np.testing.assert_array_equal(got[1], inv)
    assert got[0].dtype == uniq.dtype
