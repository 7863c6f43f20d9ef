"""The kernel-log facts end to end: Xid events mapped to NVML's GPUs and the Xid catalogue (derive), the
rules they fire, and what a redacted snapshot keeps of the log."""

from __future__ import annotations

from gpudoctor.derive import derive
from gpudoctor.facts import Facts, known, unknown
from gpudoctor.host.snapshot import Recording, redact

XID_79 = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1101234, name=nvc:[driver], GPU has fallen off the bus."


def _facts(**extra):
    items = {
        "gpus.count": known(2, "nvml"),
        "gpus[0].index": known(0, "nvml"),
        "gpus[0].bus_id": known("00000000:3B:00.0", "nvml"),  # NVML's form; the Xid line's is 0000:3b:00
        "gpus[1].index": known(1, "nvml"),
        "gpus[1].bus_id": known("00000000:AF:00.0", "nvml"),
        "xid.count": known(3, "dmesg"),
        "xid[0].code": known(79, "dmesg"),
        "xid[0].pci": known("0000:3b:00", "dmesg"),
        "xid[1].code": known(31, "dmesg"),
        "xid[1].pci": known("0000:af:00", "dmesg"),
        "xid[2].code": known(999, "dmesg"),
        "xid[2].pci": known("0000:c6:00", "dmesg"),
    }
    items.update(extra)
    return derive(Facts(items))


def test_xid_events_map_to_gpus_and_the_catalogue():
    f = _facts()
    assert (f.value("xid[0].gpu"), f.value("xid[0].where")) == (0, "GPU 0 (PCI 0000:3b:00)")
    assert (f.value("xid[0].category"), f.value("xid[0].action"), f.value("xid[0].bucket")) == (
        "hardware", "reboot", "RESTART_BM",
    )  # fmt: skip
    assert f.value("xid[1].gpu") == 1
    assert (f.value("xid[1].category"), f.value("xid[1].action")) == ("application", "restart_app")
    # a GPU NVML does not list still counts, named by its PCI address
    assert f.get("xid[2].gpu").unknown == "no GPU NVML lists is at PCI 0000:c6:00"
    assert f.value("xid[2].where") == "the GPU at PCI 0000:c6:00, which NVML does not list"
    assert f.value("xid[2].catalogued") is False
    assert f.get("xid[2].category").unknown == (
        "Xid 999 is not in gpudoctor's Xid catalogue (rules/knowledge/xid.yaml)"
    )


def test_unreadable_log_derives_nothing():
    f = derive(Facts({"xid.count": unknown("the kernel log could not be read: no permission", "kernel log")}))
    assert "xid[0].gpu" not in f


def test_rules_on_an_application_and_a_hardware_xid():
    from gpudoctor.engine.evaluate import evaluate
    from gpudoctor.engine.loader import load_rules

    rules = [r for r in load_rules([]) if r.id.startswith("GD-XID")]
    results = {(r.rule.id, r.status) for r in evaluate(rules, _facts())}
    assert ("GD-XID-001", "fired") in results  # Xid 79
    assert ("GD-XID-003", "fired") in results  # Xid 31: a program fault, not the hardware
    assert ("GD-XID-004", "fired") in results  # Xid 999: not catalogued, not ignored


def test_redacted_snapshot_keeps_only_the_driver_lines():
    dmesg = (
        "[    0.000000] Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075)\n"
        "[    3.000000] usb 1-1: SerialNumber: 4C530001230918110583\n"
        "[    4.000000] e1000e 0000:00:1f.6 eth0: (PCI Express:2.5GT/s:Width x1) 54:ee:75:aa:bb:cc\n"
        f"[ 2500.200000] {XID_79}\n"
    )
    journal = f"[ 2500.200000] node7 kernel: {XID_79}\n[ 2501.000000] node7 kernel: EXT4-fs (sda1): mounted\n"
    rec = Recording(
        files={
            "/dev/kmsg": "6,1,0,-;Linux version 6.8.0\n6,2,3000000,-;usb 1-1: SerialNumber: 4C53\n"
            f"3,3,2500200000,-;{XID_79}\n"
        },
        commands=[
            {"argv": ["dmesg"], "rc": 0, "stdout": dmesg, "stderr": ""},
            {"argv": ["journalctl", "-k", "-b", "--no-pager", "-o", "short-monotonic"], "rc": 0,
             "stdout": journal, "stderr": ""},
        ],
    )  # fmt: skip
    out = redact(rec, hostnames=("node7",))
    # Other lines keep their header or stamp (so the snapshot replays to the same count and times), not
    # their text.
    assert out.files["/dev/kmsg"] == (
        f"6,1,0,-;Linux version 6.8.0\n6,2,3000000,-;<redacted>\n3,3,2500200000,-;{XID_79}\n"
    )
    assert out.commands[0]["stdout"] == (
        "[    0.000000] Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075)\n"
        "[    3.000000] <redacted>\n[    4.000000] <redacted>\n"
        f"[ 2500.200000] {XID_79}\n"
    )
    assert out.commands[1]["stdout"] == (
        f"[ 2500.200000] redacted-host kernel: {XID_79}\n[ 2501.000000] <redacted>\n"
    )
    assert "4C53" not in str(out.files) + str(out.commands) and "54:ee:75" not in str(out.commands)
