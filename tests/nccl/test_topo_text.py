"""parse_topo on real `nvidia-smi topo -m` outputs from public issue threads (tests/nccl/data/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudoctor.nccl.topo_text import parse_topo

DATA = Path(__file__).parent / "data"
CASES = sorted(p.parent.name for p in DATA.glob("*/topo.txt"))


def load(case: str):
    return parse_topo((DATA / case / "topo.txt").read_text(encoding="utf-8"))


def gpus(n: int) -> tuple[str, ...]:
    return tuple(f"GPU{i}" for i in range(n))


def nics(n: int, name: str = "NIC") -> tuple[str, ...]:
    return tuple(f"{name}{i}" for i in range(n))


# Per case: (columns, rows read whole, affinity columns, one (a, b, cell) the thread shows).
EXPECTED = {
    "nccl1817_shm_l20": (
        gpus(8),
        gpus(4),
        ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID"),
        ("GPU0", "GPU4", "SYS"),
    ),
    "nccl1357_h100_ib_sharp": (  # GPU7's row cut in the stored copy
        gpus(8) + tuple(f"NIC{i}" for i in range(6)),
        gpus(7),
        ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID"),
        ("GPU6", "NIC3", "PIX"),
    ),
    "nccl1453_h100_nvswitch": (
        gpus(8) + tuple(f"NIC{i}" for i in range(9)),
        gpus(8),
        ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID"),
        ("GPU0", "NIC8", "PIX"),
    ),
    "nccl428_t4_socket": (gpus(4), gpus(4), ("CPU Affinity",), ("GPU1", "GPU2", "NODE")),
    "nccltests29_dgx1_v100": (
        gpus(8) + ("mlx5_0", "mlx5_1"),
        gpus(7),
        ("CPU Affinity",),
        ("GPU0", "GPU3", "NV1"),
    ),
    "topo_club3090_1125_indented": (
        gpus(2),
        gpus(2),
        ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID"),
        ("GPU0", "GPU1", "NODE"),
    ),
    "topo_club3090_1229_phb": (
        gpus(2),
        gpus(2),
        ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID"),
        ("GPU1", "GPU0", "PHB"),
    ),
    "topo_deepep128_pcie": (
        gpus(8) + nics(10),
        gpus(6),
        ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID"),
        ("GPU5", "NIC5", "PIX"),
    ),
    "topo_nccl1505_dgx_a100": (
        gpus(8) + nics(12),
        gpus(4),
        ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID"),
        ("GPU2", "NIC2", "PXB"),
    ),
    "topo_nccl1737_h100": (
        gpus(8) + nics(6),
        gpus(3),
        ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID"),
        ("GPU2", "NIC1", "PIX"),
    ),
    "topo_nccl1866_legend": ((), (), (), None),
    "topo_nccl933_nv8": (
        gpus(8) + nics(9),
        gpus(7),
        ("CPU Affinity", "NUMA Affinity"),
        ("GPU4", "NIC1", "PIX"),
    ),
}


def test_every_topo_case_is_asserted():
    assert set(CASES) == set(EXPECTED)


@pytest.mark.parametrize("case", CASES)
def test_columns_rows_and_a_cell(case):
    topo = load(case)
    devices, rows, affinity, cell = EXPECTED[case]
    assert topo.devices == devices
    assert tuple(sorted({r for r, _ in topo.cells}, key=lambda d: int(d[3:]))) == rows
    assert topo.affinity_columns == affinity
    assert topo.skipped == ()
    if cell:
        assert topo.link(cell[0], cell[1]) == cell[2]
    for row in rows:
        assert topo.cells[(row, row)] == "X"


def test_affinities():
    l20 = load("nccl1817_shm_l20")
    assert l20.cpu_affinity["GPU3"] == "0-47,96-143"
    assert l20.numa_affinity == {f"GPU{i}": "0" for i in range(4)}
    assert l20.gpu_numa_id["GPU0"] == "N/A"
    t4 = load("nccl428_t4_socket")  # old nvidia-smi: CPU Affinity only
    assert t4.cpu_affinity == {
        "GPU0": "0-15,32-47",
        "GPU1": "16-31,48-63",
        "GPU2": "16-31,48-63",
        "GPU3": "16-31,48-63",
    }
    assert t4.numa_affinity == {}
    a100 = load("topo_nccl1505_dgx_a100")
    assert (a100.numa_affinity["GPU0"], a100.numa_affinity["GPU2"]) == ("3", "1")
    tabs = load("topo_club3090_1229_phb")  # tab-separated, an empty column before GPU NUMA ID
    assert (tabs.cpu_affinity, tabs.numa_affinity, tabs.gpu_numa_id) == (
        {"GPU0": "0-63", "GPU1": "0-63"},
        {"GPU0": "0", "GPU1": "0"},
        {"GPU0": "N/A", "GPU1": "N/A"},
    )


def test_nvlink_counts():
    assert load("topo_nccl1737_h100").nvlinks("GPU0", "GPU7") == 18
    assert load("topo_nccl1505_dgx_a100").nvlinks("GPU3", "GPU1") == 12
    dgx1 = load("nccltests29_dgx1_v100")  # hybrid cube mesh: 2, 1 or no NVLink
    assert [dgx1.nvlinks("GPU0", f"GPU{i}") for i in range(1, 8)] == [2, 2, 1, 1, 0, 0, 0]
    # GPU7's row was cut from the paste; its links are read from the other GPUs' rows.
    assert dgx1.link("GPU7", "GPU3") == "NV2"
    assert load("nccl428_t4_socket").nvlinks("GPU0", "GPU1") == 0


def test_nic_columns_and_legend():
    assert load("topo_nccl1866_legend").nic_legend == {f"NIC{i}": f"mlx5_{i}" for i in range(5)}
    dgx1 = load("nccltests29_dgx1_v100")  # old nvidia-smi names the RDMA device in the column itself
    assert (dgx1.nics, dgx1.nic_name("mlx5_1"), dgx1.link("GPU2", "mlx5_0")) == (
        ("mlx5_0", "mlx5_1"),
        "mlx5_1",
        "PIX",
    )
    h100 = load("topo_nccl1737_h100")
    assert h100.gpus == gpus(8)
    assert [h100.link("GPU0", n) for n in h100.nics] == ["PIX", "NODE", "NODE", "NODE", "SYS", "SYS"]


def test_p2p_matrix_after_the_legend_is_not_read():
    topo = load("topo_club3090_1125_indented")  # followed by `GPU0 X NS` from topo -p2p
    assert topo.link("GPU0", "GPU1") == "NODE"
    assert topo.skipped == ()


def test_truncated_row_is_skipped_not_raised():
    text = (DATA / "nccl428_t4_socket" / "topo.txt").read_text(encoding="utf-8")
    cut = text.rsplit("NODE", 2)[0]  # GPU3's row cut in the middle, as pastes are
    topo = parse_topo(cut)
    assert topo.skipped == ("GPU3",)
    assert topo.link("GPU1", "GPU2") == "NODE"
    assert parse_topo("") == parse_topo("no matrix here\n")
