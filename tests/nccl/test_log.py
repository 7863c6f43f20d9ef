"""parse_log on real NCCL_DEBUG=INFO logs from public issue threads (tests/nccl/data/SOURCES.md names each
thread): what NCCL printed it chose, per case, exactly."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpudoctor.nccl.log import IbDevice, RankInfo, SocketInterface, parse_log, parse_transport, transports

DATA = Path(__file__).parent / "data"
CASES = sorted(p.parent.name for p in DATA.glob("*/nccl.log"))


def load(case: str):
    return parse_log((DATA / case / "nccl.log").read_text(encoding="utf-8"))


def pairs(case: str) -> dict[tuple[int, int], set[str]]:
    return transports(load(case))


# Per case: the transports per directed pair exactly as NCCL printed them (NIC index left out).
TRANSPORTS = {
    "easydistill4_pylogging": {(2, 0): {"P2P/IPC"}, (5, 0): {"P2P/IPC"}, (7, 0): {"P2P/IPC"}},
    "megatron516_busid": {
        (b, a): {"P2P/IPC/read"} for a, b in [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6)]
    },
    "nccl1189_h20_ib_cumem": {
        (0, 2): {"NET/IB/GDRDMA"},
        (1, 3): {"NET/IB/GDRDMA"},
        (3, 1): {"NET/IB/GDRDMA"},
        (1, 0): {"P2P/CUMEM"},
        (3, 2): {"P2P/CUMEM"},
    },
    "nccl1235_p2p_ipc_read": {
        (0, 1): {"P2P/IPC/read"},
        (1, 2): {"P2P/IPC/read"},
        (2, 3): {"P2P/IPC/read"},
        (3, 0): {"P2P/IPC/read"},
    },
    "nccl1538_cumem": {(0, 7): {"P2P/CUMEM"}},
    "nccl1814_ibext_cumem": {
        **{
            p: {"NET/IBext_v8"}
            for p in [(18, 34), (22, 38), (25, 32), (26, 33), (33, 40), (35, 42), (35, 51), (39, 55)]
        },
        (32, 39): {"P2P/CUMEM"},
    },
    "nccl1817_p2p_l20": {p: {"P2P/direct pointer"} for p in [(1, 0), (2, 1), (3, 2), (6, 5), (7, 6)]},
    "nccl1817_shm_l20": {
        p: {"SHM/direct/direct"}
        for p in [(0, 4), (1, 5), (2, 6), (3, 7), (4, 0), (5, 1), (6, 2), (7, 2), (7, 3)]
    },
    "nccl1817_l20_ring": {
        (1, 2): {"SHM/direct/direct"},
        (2, 3): {"P2P/direct pointer"},
        (3, 4): {"SHM/direct/direct"},
        (4, 5): {"P2P/direct pointer"},
        (5, 6): {"SHM/direct/direct"},
        (7, 0): {"SHM/direct/direct"},
    },
    "nccl1259_hgx_h100": {p: {"P2P/direct pointer"} for p in [(1, 0), (4, 3), (7, 6)]},
    "nccl1453_h100_nvswitch": {(0, 7): {"P2P/CUMEM"}, (0, 15): {"NET/IBext_v8/GDRDMA"}},
    "nccltests307_4090_shm": {
        p: {"SHM/direct/direct"} for p in [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7), (7, 0)]
    },
    "nccltests228_p2p_level_loc": {(b, a): {"SHM/direct/direct"} for a, b in [(i, i + 1) for i in range(7)]},
    "nccl367_ring_old": {
        (1, 2): {"direct shared memory"},
        (2, 3): {"direct shared memory"},
        (15, 0): {"NET/Socket"},
    },
    "nccl707_a100_gdrdma": {
        p: {"NET/IB/GDRDMA"} for p in [(0, 1), (0, 2), (2, 0), (2, 1), (2, 3), (3, 0), (3, 2)]
    },
    "nccl719_k9s_ib": {(0, 1): {"P2P/IPC/read"}, (1, 2): {"NET/IB"}, (3, 0): {"NET/IB"}},
    "nccl892_h800_direct": {(4, 2): {"P2P/direct pointer"}, (7, 4): {"P2P/direct pointer"}},
    "nccl952_ib_nodev_socket": {
        **{p: {"P2P/IPC/read"} for p in [(8, 15), (10, 9), (12, 11), (13, 12), (15, 14)]},
        (15, 6): {"NET/Socket"},
    },
    "nccltests213_p2p_direct": {p: {"P2P/direct pointer"} for p in [(1, 2), (3, 4), (4, 5), (5, 6), (7, 0)]},
    "pytorch54232_direct_shm": {
        (1, 2): {"NET/Socket"},
        (2, 1): {"NET/Socket"},
        (3, 0): {"NET/Socket"},
        (2, 3): {"direct shared memory"},
        (3, 2): {"direct shared memory"},
    },
    "pytorch81628_roce_ib": {(0, 1): {"NET/IB"}},
    "nccltests373_ib_disable_ibext": {(1, 2): {"NET/IBext_v8"}, (2, 0): {"NET/IBext_v8"}},
    "nccl1357_h100_ib_sharp": {
        (6, 5): {"P2P/CUMEM"},
        (4, 3): {"P2P/CUMEM"},
        (14, 12): {"P2P/CUMEM"},
        (15, 8): {"P2P/CUMEM"},
    },
    "nccl1412_a100_ib": {
        (7, 6): {"P2P/direct pointer/read"},
        (6, 3): {"P2P/direct pointer/read"},
        (5, 4): {"P2P/direct pointer/read"},
        (5, 12): {"NET/IB"},
        (13, 4): {"NET/IB"},
    },
    "sglang8974_ib_disable": {(2, 3): {"P2P/IPC"}},
    "tinygrad45_4090_shm": {(0, 1): {"SHM/direct/direct"}},
    "nccltests133_direct_read_gdr": {
        **{p: {"P2P/direct pointer/read"} for p in [(14, 13), (8, 15), (11, 10), (4, 3), (4, 5), (9, 8)]},
        (13, 4): {"NET/IB/GDRDMA"},
        (5, 12): {"NET/IB/GDRDMA"},
    },
}

# Per case: (versions, `Using network`, env overrides NCCL printed, `NET/IB : No device found`).
SETTINGS = {
    "multus1100_roce": (("2.13.4",), ("IB",), {}, False),
    "nccl1053_ib_disable_lo": (
        (),
        ("Socket",),
        {"NCCL_IBEXT_DISABLE": "1", "NCCL_IB_DISABLE": "1", "NCCL_SOCKET_IFNAME": "lo"},
        False,
    ),
    "nccl1232_mpirun_tag": ((), (), {"NCCL_SOCKET_IFNAME": "en,eth,em,bond"}, False),
    "nccl1453_h100_nvls": ((), (), {"NCCL_CROSS_NIC": "2"}, False),
    "nccl1537_roce_gdr_disabled": ((), ("IB",), {}, False),
    "nccl1637_5090_socket": (("2.25.1",), ("Socket",), {}, True),
    "nccl226_aws_socket": ((), (), {}, True),
    "nccl367_ring_old": ((), (), {"NCCL_NSOCKS_PERTHREAD": "8"}, False),
    "nccl428_t4_socket": (("2.8.3",), ("Socket",), {}, False),
    "nccl892_h800_direct": ((), (), {"NCCL_ALGO": "Tree,Ring,,CollnetDirect,CollnetChain,NVLS"}, False),
    "nccl941_container_socket": (("2.17.1",), ("Socket",), {}, True),
    "nccltests228_nvswitch_ib": (
        (),
        ("IB",),
        {"NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": "mlx5_2:1,mlx5_0:1"},
        False,
    ),
    "nvpeermem56_ib_no_gdr": (("2.4.7",), (), {"NCCL_IB_DISABLE": "0"}, False),
    "pytorch72835_no_p2p": (("2.10.3",), ("Socket",), {}, True),
    "pytorch81628_roce_ib": ((), ("IB",), {"NCCL_IB_DISABLE": "0"}, False),
    "sglang8974_ib_disable": (("2.27.6",), (), {"NCCL_IB_DISABLE": "1"}, False),
    "nvdocs_logging": (("2.30.3",), ("IB",), {}, False),
    "nccl1066_ib_and_roce": (("2.12.12",), ("IB",), {}, False),
}


def test_every_case_has_an_exact_assertion():
    covered = set(TRANSPORTS) | set(SETTINGS) | {"nccl1189_h20_ib_cumem", "nccltests29_dgx1_v100"}
    assert set(CASES) <= covered, set(CASES) - covered
    assert len(CASES) >= 15


@pytest.mark.parametrize("case", CASES)
def test_transports_per_pair_as_nccl_printed_them(case):
    assert pairs(case) == TRANSPORTS.get(case, {})


@pytest.mark.parametrize("case", sorted(SETTINGS))
def test_version_network_env_and_ib_presence(case):
    log = load(case)
    versions, networks, env, no_ib = SETTINGS[case]
    assert (log.versions, log.networks, log.env, log.ib_no_device) == (versions, networks, env, no_ib)


def test_ib_devices_and_link_layers():
    assert load("nccltests228_nvswitch_ib").ib_devices == (
        IbDevice(0, "mlx5_0", 1, "IB"),
        IbDevice(1, "mlx5_2", 1, "IB"),
    )
    assert [(d.name, d.link_layer) for d in load("pytorch81628_roce_ib").ib_devices] == [
        ("mlx5_0", "RoCE"),
        ("mlx5_1", "RoCE"),
        ("i40iw0", "RoCE"),
    ]
    assert load("multus1100_roce").ib_devices == (IbDevice(0, "mlx5_4", 1, "RoCE"),)
    assert [d.link_layer for d in load("nccl1066_ib_and_roce").ib_devices] == ["IB", "IB", "RoCE"]
    assert load("nvpeermem56_ib_no_gdr").ib_devices == (IbDevice(0, "mlx5_0", 1, "IB"),)
    # `NET/IB : Using [RO]; OOB eno1:...` after `No device found`: no device at all.
    assert load("nccl1637_5090_socket").ib_devices == ()
    # NICs merged into virtual ones (NVIDIA/nccl-tests#373): `[0]={[0] mlx5_2:1/RoCE, [1] mlx5_3:1/RoCE}`
    assert [(d.index, d.name, d.link_layer) for d in load("nccltests373_ib_disable_ibext").ib_devices] == [
        (0, "mlx5_2", "RoCE"),
        (1, "mlx5_3", "RoCE"),
        (2, "mlx5_0", "RoCE"),
        (3, "mlx5_1", "RoCE"),
    ]


def test_socket_interfaces():
    assert load("nccl941_container_socket").socket_interfaces == (
        SocketInterface(0, "ens5f0np0", "10.220.178.201"),
        SocketInterface(1, "ens3f0np0", "192.17.3.33"),
        SocketInterface(2, "ens8f1np1", "10.220.178.201"),
        SocketInterface(3, "bond0", "10.220.178.201"),
        SocketInterface(4, "virbr0", "192.168.122.1"),
    )
    assert load("nccl1053_ib_disable_lo").socket_interfaces == (SocketInterface(0, "lo", "127.0.0.1"),)
    assert {s.address for s in load("nccl226_aws_socket").socket_interfaces} == {
        "172.31.12.210",
        "172.31.5.237",
        "172.31.0.110",
        "172.31.14.85",
        "172.31.5.41",
        "172.31.4.37",
        "172.31.6.136",
    }


def test_gdr_statements():
    gdr = load("nccl1537_roce_gdr_disabled").gdr
    assert [(g.enabled, g.hca_index, g.hca) for g in gdr] == [(False, 0, "mlx5_0"), (False, 1, "mlx5_1")]
    (lo,) = load("nccl1053_ib_disable_lo").gdr
    assert (lo.enabled, lo.hca, lo.text) == (
        False,
        "lo",
        "NET/Socket : GPU Direct RDMA Disabled for HCA 0 'lo'",
    )


def test_channels_keep_gdr_nic_direction_and_bracket():
    h20 = load("nccl1189_h20_ib_cumem").channels[0]
    assert (h20.channel, h20.conn, h20.src, h20.dst, h20.direction, h20.host) == (
        7,
        0,
        0,
        2,
        "receive",
        "H20-GPU-06",
    )
    assert (h20.transport.kind, h20.transport.net, h20.transport.nic, h20.transport.gdr) == (
        "net",
        "IB",
        3,
        True,
    )
    old = load("nccl707_a100_gdrdma").channels[0]  # before 2.12 the bracket is the busId
    assert (old.conn, old.src_tag, old.dst_tag) == (None, "c7000", "87000")
    k9s = load("nccl719_k9s_ib").channels[0]
    assert (k9s.transport.raw, k9s.transport.gdr, k9s.transport.nic) == ("NET/IB/0", False, 0)
    ring = load("nccl367_ring_old").channels[2]
    assert (ring.src, ring.dst, ring.src_tag, ring.direction, ring.transport.net) == (
        15,
        0,
        "",
        "receive",
        "Socket",
    )
    py = load("easydistill4_pylogging").channels[0]
    assert (py.channel, py.conn, py.host) == (31, 1, "g340-cd51-4900-b72a-d104-a9bf-df48")


def test_ranks_from_comm_lines():
    h20 = load("nccl1189_h20_ib_cumem")
    assert [(r.rank, r.host, r.pid, r.cuda_dev, r.bus_id) for r in h20.ranks] == [
        (0, "H20-GPU-05", "1789224", 0, "18000"),
        (1, "H20-GPU-05", "1789225", 1, "38000"),
        (2, "H20-GPU-06", "4015539", 0, "18000"),
        (3, "H20-GPU-06", "4015540", 1, "38000"),
    ]
    assert h20.nranks == 4
    nvls = load("nccl1453_h100_nvls")
    assert nvls.ranks == (
        RankInfo(0, 24, "0x5639e9f0e8c0", "h100clust-worker-1", "227602", None, "", nnodes=3, local_rank=0),
    )
    assert (nvls.nranks, nvls.nnodes) == (24, 3)
    shm = load("nccl1817_shm_l20")  # Destroy COMPLETE lines carry busId too
    assert [(r.rank, r.bus_id) for r in shm.ranks] == [(4, "91000"), (5, "92000"), (6, "c4000"), (7, "c5000")]
    dgx1 = load("nccltests29_dgx1_v100")  # no busId in 2.4-era Init COMPLETE
    assert dgx1.nranks == 32
    assert {r.host for r in dgx1.ranks} == {"server1", "server2", "server3", "server4"}
    assert [(r.rank, r.cuda_dev, r.bus_id) for r in dgx1.ranks][:3] == [(4, 4, ""), (5, 5, ""), (6, 6, "")]
    roce = load("nccl1537_roce_gdr_disabled")  # Init START line
    assert [(r.rank, r.nranks, r.bus_id) for r in roce.ranks] == [(0, 16, "1c000")]


def test_p2p_unavailable_and_warnings():
    assert load("pytorch72835_no_p2p").p2p_unavailable == ((1, 0), (0, 1))
    assert load("pytorch54232_direct_shm").p2p_unavailable == ((3, 2), (2, 3))
    assert load("nccl428_t4_socket").warnings == ("Failed to open libibverbs.so[.1]",)


def test_dmabuf_and_timestamped_warning_from_nccls_docs():
    log = load("nvdocs_logging")
    assert log.dmabuf_gpus == (0,)
    assert log.warnings == ("Failed to initialize any NET plugin",)
    assert log.hosts == ("node-01",)


def test_prefixes_seen_in_the_corpus():
    assert load("nccl1232_mpirun_tag").hosts == ("node0", "node2")  # `[0] node0:...`
    assert load("nccl1453_h100_nvls").hosts == ("h100clust-worker-1",)
    assert load("nccl952_ib_nodev_socket").hosts == ("<cluster_name>",)  # anonymised host
    # A garbled paste (two lines run together) still reads as the host it names.
    assert load("sglang8974_ib_disable").hosts == (
        "adp-us-llm-1-00001-deployment-6f47c67945-s59dl",
        "adp-uadp-us-llm-1-00001-deployment-6f47c67945-s59dl",
    )


@pytest.mark.parametrize(
    ("via", "kind", "detail", "net", "nic", "proxy", "gdr", "read"),
    [
        ("P2P/IPC/read", "p2p", "IPC", "", None, None, False, True),
        ("P2P/CUMEM", "p2p", "CUMEM", "", None, None, False, False),
        ("P2P/direct pointer", "p2p", "direct pointer", "", None, None, False, False),
        ("P2P/direct pointer/read", "p2p", "direct pointer", "", None, None, False, True),
        ("SHM/direct/direct", "shm", "direct/direct", "", None, None, False, False),
        ("direct shared memory", "shm", "direct", "", None, None, False, False),
        ("NET/IB/3/GDRDMA", "net", "", "IB", 3, None, True, False),
        ("NET/Socket/3", "net", "", "Socket", 3, None, False, False),
        ("NET/IBext_v8/0", "net", "", "IBext_v8", 0, None, False, False),
    ],
)
def test_parse_transport_on_strings_from_the_corpus(via, kind, detail, net, nic, proxy, gdr, read):
    t = parse_transport(via)
    assert (t.raw, t.kind, t.detail, t.net, t.nic, t.proxy, t.gdr, t.read) == (
        via,
        kind,
        detail,
        net,
        nic,
        proxy,
        gdr,
        read,
    )


def test_lines_that_are_not_nccl_are_left_out():
    # the torchrun banner and the nccl-tests table in these logs add nothing
    assert load("tinygrad45_4090_shm").warnings == ()
    log = parse_log("")
    assert (log.version, log.nranks, log.channels, log.networks) == (None, None, (), ())


@given(st.text())
def test_never_raises_on_junk(text):
    parse_log(text)
