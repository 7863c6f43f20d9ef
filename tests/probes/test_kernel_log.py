"""The kernel-log probe: Xid and SXid lines in the formats the NVIDIA drivers really write, through
/dev/kmsg, dmesg and journalctl, and what is reported when none of them can be read.

Where each line format was seen (search tool, code / issues / pages corpora):
- "NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus." with no pid: NVIDIA/open-gpu-kernel-modules
  issue 1151 (journalctl of an RTX 5080), and gpud's test cases.
- "NVRM: Xid (PCI:0000:c6:00): 79, pid=1101234, name=nvc:[driver], GPU has fallen off the bus.": Modal's
  GPU health guide (modal.com/docs/guide/gpu-health).
- "NVRM: Xid (PCI:0000:c1:00): 31, pid=2646416, name=python, channel 0x0000001a, intr 00000000. MMU Fault:
  ...": NVIDIA/open-gpu-kernel-modules issue 1208 and abhik.ai's Xid 31 article.
- "NVRM: Xid (PCI:0000:4e:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus." with a dmesg
  timestamp "[1235733.431527]": a health-check script's docstring in the code corpus; the same
  pid='<unknown>' form in an Arch Linux user's journal (Xid 13).
- "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to
  activate.": stas00/ml-engineering compute/accelerator/nvidia/debug.md.
- "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot
  Required)": several users' logs in the code corpus.
- "NVRM: Xid (0000:03:00): 14, Channel 00000001" (no "PCI:"): NVIDIA's older Xid documentation, quoted in
  gpud's source.
- "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error
  (First)": NVIDIA/NVSentinel tests; "kernel: [123.456789] nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): 20009,
  Non-fatal, Link 28 RX Short Error Rate" (NVSentinel's syslog tests, the journal form); the driver's own
  format string "%s: SXid (PCI:" LWLINK_PCI_DEV_FMT "): %05d, " in an NVSwitch driver source.
- "[    5.123456] host kernel: MESSAGE": journalctl -o short-monotonic; /dev/kmsg's "PRIORITY,SEQUENCE,
  MICROSECONDS,FLAGS;MESSAGE" is the kernel's Documentation/ABI/testing/dev-kmsg format, read here on this
  machine's own /dev/kmsg (test_live_kmsg below).
"""

from __future__ import annotations

import os

import pytest

from gpudoctor.host.base import NO_PERMISSION
from gpudoctor.probes import kernel_log as kl

from conftest import fake_host

XID_79_NO_PID = "NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus."
XID_79_MODAL = "NVRM: Xid (PCI:0000:c6:00): 79, pid=1101234, name=nvc:[driver], GPU has fallen off the bus."
XID_31 = (
    "NVRM: Xid (PCI:0000:c1:00): 31, pid=2646416, name=python, channel 0x0000001a, intr 00000000. MMU Fault: "
    "ENGINE GRAPHICS GPC10 GPCCLIENT_T1_5 faulted @ 0x725f_fb800000. Fault is of type FAULT_PDE "
    "ACCESS_TYPE_VIRT_READ"
)
XID_79_UNKNOWN = (
    "NVRM: Xid (PCI:0000:4e:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
)
XID_63 = "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate."  # noqa: E501 - a real line, whole
XID_154 = "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"  # noqa: E501
XID_OLD = "NVRM: Xid (0000:03:00): 14, Channel 00000001"
SXID = "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)"  # noqa: E501
SXID_FATAL = "nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): 23001, Fatal, Link 12 Always Fatal"

DMESG = f"""[    0.000000] Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075)
[   12.345678] nvidia 0000:3b:00.0: enabling device (0140 -> 0142)
[ 1936.510073] {XID_31}
[ 1940.000001] {XID_31}
[ 2500.100000] NVRM: GPU at PCI:0000:01:00: GPU-0b11d014-1685-04bd-26ed-5fc0bc1c44ae
[ 2500.200000] {XID_79_NO_PID}
[ 2500.200100] NVRM: GPU 0000:01:00.0: GPU has fallen off the bus.
[ 2500.300000] {XID_154}
[ 3000.000000] {SXID}
"""
JOURNAL = f"""[    0.000000] node7 kernel: Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075)
[ 2500.200000] node7 kernel: {XID_79_NO_PID}
[ 3000.000000] node7 kernel: {SXID_FATAL}
"""
KMSG = (
    "6,1,0,-;Linux version 6.8.0-45-generic\n"
    " SUBSYSTEM=pci\n"
    f"3,812,1936510073,-;{XID_31}\n"
    f"3,900,2500200000,-;{XID_79_NO_PID}\n"
)
UPTIME = "3600.50 7000.00\n"


def test_parse_xid_formats():
    assert kl.parse_xid(XID_79_NO_PID) == {
        "pci": "0000:01:00", "code": 79, "pid": None, "process": None, "text": "GPU has fallen off the bus.",
    }  # fmt: skip
    assert kl.parse_xid(XID_79_MODAL) == {
        "pci": "0000:c6:00", "code": 79, "pid": 1101234, "process": "nvc:[driver]",
        "text": "GPU has fallen off the bus.",
    }  # fmt: skip
    e = kl.parse_xid(XID_31)
    assert (e["pci"], e["code"], e["pid"], e["process"]) == ("0000:c1:00", 31, 2646416, "python")
    assert e["text"].startswith("channel 0x0000001a, intr 00000000. MMU Fault")
    assert kl.parse_xid(XID_79_UNKNOWN) == {
        "pci": "0000:4e:00", "code": 79, "pid": None, "process": None, "text": "GPU has fallen off the bus.",
    }  # fmt: skip
    e = kl.parse_xid(XID_63)
    assert (e["pci"], e["code"], e["pid"], e["process"]) == ("0000:10:1c", 63, 1896, None)
    assert e["text"] == "Row Remapper: New row marked for remapping, reset gpu to activate."
    assert kl.parse_xid(XID_154)["text"].startswith("GPU recovery action changed from 0x0 (None)")
    assert kl.parse_xid(XID_OLD) == {
        "pci": "0000:03:00", "code": 14, "pid": None, "process": None, "text": "Channel 00000001",
    }  # fmt: skip


@pytest.mark.parametrize(
    "line",
    [
        "NVRM: GPU 0000:01:00.0: GPU has fallen off the bus.",
        "NVRM: GPU at PCI:0000:01:00: GPU-0b11d014-1685-04bd-26ed-5fc0bc1c44ae",
        "NVRM: Xid (PCI:0000:66:00): abc, pid=2280636",
        "NVRM: Xid error: xyz, invalid data",
        SXID,
    ],
)
def test_lines_that_are_not_xid(line):
    assert kl.parse_xid(line) is None


def test_parse_sxid():
    assert kl.parse_sxid(SXID) == {
        "device": "nvidia-nvswitch3", "pci": "0000:05:00", "code": 12028, "fatal": False,
        "text": "Non-fatal, Link 32 egress non-posted PRIV error (First)",
    }  # fmt: skip
    assert kl.parse_sxid(SXID_FATAL)["fatal"] is True
    assert kl.parse_sxid("nvidia-nvswitch3: SXid (PCI:0000:c1:00.0): 20009, garbled")["fatal"] is None
    assert kl.parse_sxid(XID_31) is None


@pytest.mark.parametrize(
    "address, expected",
    [
        ("00000000:3B:00.0", "0000:3b:00"),  # NVML's bus id
        ("0000:3b:00", "0000:3b:00"),  # the Xid line's
        ("0000:3b:00.0", "0000:3b:00"),  # sysfs's
        ("0018:01:00", "0018:01:00"),  # a Grace Hopper domain
        ("3b:00", None),
        ("GPU-0b11d014", None),
    ],
)
def test_normalise_pci(address, expected):
    assert kl.normalise_pci(address) == expected


def test_parse_the_three_sources():
    assert kl.parse_kmsg(KMSG) == [
        (0.0, "Linux version 6.8.0-45-generic"),
        (1936.510073, XID_31),
        (2500.2, XID_79_NO_PID),
    ]
    assert kl.parse_dmesg(DMESG)[2] == (1936.510073, XID_31)
    assert kl.parse_journal(JOURNAL + "-- No entries --\n") == [
        (0.0, "Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075)"),
        (2500.2, XID_79_NO_PID),
        (3000.0, SXID_FATAL),
    ]


@pytest.mark.parametrize(
    "text, seconds",
    [("90s", 90), ("30m", 1800), ("24h", 86400), ("7d", 604800), ("2w", 1209600), ("1.5h", 5400)],
)
def test_parse_duration(text, seconds):
    assert kl.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["24", "h", "0h", "-1h", "24 hours", "1y", ""])
def test_parse_duration_refuses(text):
    with pytest.raises(ValueError, match="is not a duration"):
        kl.parse_duration(text)


def _values(facts, prefix):
    return {
        k: f.value if f.known else ("unknown", f.unknown) for k, f in facts.items() if k.startswith(prefix)
    }


def test_probe_reads_kmsg_first():
    host = fake_host(files={"/dev/kmsg": KMSG, "/proc/uptime": UPTIME})
    facts = kl.probe(host)
    assert facts["kernel_log.source"].value == "/dev/kmsg"
    assert facts["kernel_log.status"].value == "ok"
    assert facts["kernel_log.lines"].value == 3
    assert facts["xid.count"].value == 2
    assert _values(facts, "xid[1].") == {
        "xid[1].code": 79, "xid[1].pci": "0000:01:00", "xid[1].pid": ("unknown", "the line names no process"),
        "xid[1].process": ("unknown", "the line names no process"),
        "xid[1].text": "GPU has fallen off the bus.",
        "xid[1].events": 1, "xid[1].first_seconds": 2500.2, "xid[1].last_seconds": 2500.2,
        "xid[1].age_seconds": 1100.3,
    }  # fmt: skip
    assert facts["sxid.count"].value == 0


def test_probe_falls_back_to_dmesg_and_groups_events():
    host = fake_host(
        files={"/proc/uptime": UPTIME},
        read_errors={"/dev/kmsg": "not found"},
        commands=[{"argv": ["dmesg"], "rc": 0, "stdout": DMESG, "stderr": ""}],
    )
    facts = kl.probe(host)
    assert facts["kernel_log.source"].value == "dmesg"
    assert facts["xid.count"].value == 3  # 31 twice on one GPU is one event group; 79 and 154
    assert (facts["xid[0].code"].value, facts["xid[0].events"].value) == (31, 2)
    assert (facts["xid[0].first_seconds"].value, facts["xid[0].last_seconds"].value) == (
        1936.510073,
        1940.000001,
    )
    assert [facts[f"xid[{i}].code"].value for i in range(3)] == [31, 79, 154]
    assert facts["sxid.count"].value == 1
    assert facts["sxid[0].fatal"].value is False


def test_since_keeps_only_the_window():
    host = fake_host(
        files={"/proc/uptime": UPTIME},
        read_errors={"/dev/kmsg": "no permission"},
        commands=[{"argv": ["dmesg"], "rc": 0, "stdout": DMESG, "stderr": ""}],
    )
    facts = kl.probe(host, since=kl.parse_duration("20m"))  # uptime 3600.5: from 2400.5 on
    assert facts["kernel_log.window"].value == "last 1200 s"
    assert [facts[f"xid[{i}].code"].value for i in range(facts["xid.count"].value)] == [79, 154]
    assert kl.probe(host, since=60.0)["xid.count"].value == 0  # nothing in the last minute: known, 0


def test_journalctl_when_kmsg_and_dmesg_are_refused():
    host = fake_host(
        files={"/proc/uptime": UPTIME},
        read_errors={"/dev/kmsg": "no permission"},
        commands=[
            {"argv": ["dmesg"], "rc": 1, "stdout": "",
             "stderr": "dmesg: read kernel buffer failed: Operation not permitted\n"},
            {"argv": list(kl.JOURNAL), "rc": 0, "stdout": JOURNAL, "stderr": ""},
        ],
    )  # fmt: skip
    facts = kl.probe(host)
    assert facts["kernel_log.source"].value == "journalctl -k"
    assert [facts[f"xid[{i}].code"].value for i in range(facts["xid.count"].value)] == [79]
    assert facts["sxid[0].fatal"].value is True


def test_unreadable_log_is_unknown_not_no_xid():
    host = fake_host(
        files={"/proc/sys/kernel/dmesg_restrict": "1\n"},
        read_errors={"/dev/kmsg": "no permission"},
        commands=[
            {"argv": ["dmesg"], "rc": 1, "stdout": "",
             "stderr": "dmesg: read kernel buffer failed: Operation not permitted\n"},
            {"argv": list(kl.JOURNAL), "rc": 0, "stdout": "-- No entries --\n",
             "stderr": "Hint: You are currently not seeing messages from other users and the system.\n"
                       "      Users in groups 'adm', 'systemd-journal' can see all messages.\n"},
        ],
    )  # fmt: skip
    facts = kl.probe(host)
    assert facts["kernel_log.status"].value == NO_PERMISSION
    assert facts["xid.count"].unknown == "the kernel log could not be read: no permission"
    assert facts["sxid.count"].unknown == "the kernel log could not be read: no permission"
    assert facts["kernel_log.error"].value == (
        "/dev/kmsg: no permission; dmesg: dmesg: read kernel buffer failed: Operation not permitted; "
        "journalctl -k: not in the adm or systemd-journal group; kernel.dmesg_restrict=1. To read it: "
        + kl.ACCESS
    )


def test_container_without_any_log():
    host = fake_host(
        read_errors={"/dev/kmsg": "not found"},
        commands=[
            {"argv": ["dmesg"], "error": "not found"},
            {"argv": list(kl.JOURNAL), "rc": 0, "stdout": "", "stderr": "No journal files were found.\n"},
        ],
    )
    facts = kl.probe(host)
    assert facts["kernel_log.status"].value == "empty"
    assert facts["xid.count"].known is False
    assert "dmesg: not installed" in facts["kernel_log.error"].value


def test_lines_are_bounded(monkeypatch):
    monkeypatch.setattr(kl, "MAX_LINES", 2)
    host = fake_host(files={"/dev/kmsg": KMSG})
    facts = kl.probe(host)
    assert facts["kernel_log.lines"].value == 2
    assert facts["kernel_log.truncated"].value is True
    assert facts["xid[0].age_seconds"].unknown == "no timestamp or no /proc/uptime"


@pytest.mark.skipif(not os.access("/dev/kmsg", os.R_OK), reason="this machine's /dev/kmsg is not readable")
def test_live_kmsg_does_not_block():
    """The live Host reads the real /dev/kmsg without blocking (a plain read would wait forever)."""
    import time

    from gpudoctor.host.base import Deadline
    from gpudoctor.host.live import LiveHost

    started = time.monotonic()
    text = LiveHost(deadline=Deadline(5.0)).read("/dev/kmsg")
    assert time.monotonic() - started < 2.0
    records = kl.parse_kmsg(text)
    assert records and all(isinstance(s, float) for s, _ in records)


# --- sleeps since boot (issue 27) -----------------------------------------------------------------------
# Where each line was seen:
# - "PM: suspend entry (deep)" and "ACPI: Preparing to enter system sleep state S3": a NixOS user's journal
#   of a working resume, https://github.com/NixOS/nixpkgs/issues/119843
# - "PM: suspend exit": a Bazzite user's journal, https://github.com/ublue-os/bazzite/issues/4297
# - "[   61.010440] PM: suspend entry (s2idle)": a Surface Book's dmesg,
#   https://github.com/jakeday/linux-surface/issues/554
# - "ACPI: PM: Waking up from system sleep state S4" then "PM: hibernation: hibernation exit": a Lenovo
#   YOGA's journal (code corpus), printed by kernel/power/hibernate.c's `pr_info("hibernation exit\n")`
#   under pr_fmt "PM: hibernation: " (the kernel source, code corpus)
# - "[14902.841326] NVRM: GPU 0000:01:00.0: PreserveVideoMemoryAllocations module parameter is set. ...":
#   a Pop!_OS laptop on 580.82.07 that could not suspend, https://github.com/pop-os/pop/issues/3590
REFUSED = (
    "NVRM: GPU 0000:01:00.0: PreserveVideoMemoryAllocations module parameter is set. System Power Management "
    "attempted without driver procfs suspend interface. Please refer to the 'Configuring Power Management "
    "Support' section in the driver README."
)
SLEEPY_DMESG = f"""[    0.000000] Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075)
[ 1200.000100] PM: suspend entry (deep)
[ 1200.100000] ACPI: Preparing to enter system sleep state S3
[ 1201.500000] PM: suspend exit
[ 2000.000000] PM: suspend entry (s2idle)
[ 2002.250000] PM: suspend exit
[ 2500.200000] {XID_79_NO_PID}
[ 3000.000000] ACPI: PM: Waking up from system sleep state S4
[ 3000.500000] PM: hibernation: hibernation exit
[ 3300.000000] {REFUSED}
"""


def test_sleeps_are_counted_with_their_kind():
    seen = kl.sleeps(kl.parse_dmesg(SLEEPY_DMESG))
    assert seen == {"count": 3, "last_seconds": 3000.5, "last_kind": "hibernate", "refused": 1}
    first_two = kl.parse_dmesg(SLEEPY_DMESG)[:6]
    assert kl.sleeps(first_two) == {"count": 2, "last_seconds": 2002.25, "last_kind": "s2idle", "refused": 0}


def test_probe_states_the_sleeps_since_boot_whatever_since_says():
    host = fake_host(
        files={"/proc/uptime": UPTIME},
        read_errors={"/dev/kmsg": "no permission"},
        commands=[{"argv": ["dmesg"], "rc": 0, "stdout": SLEEPY_DMESG, "stderr": ""}],
    )
    facts = kl.probe(host, since=60.0)
    assert _values(facts, "suspend.") == {
        "suspend.count": 3,
        "suspend.last_kind": "hibernate",
        "suspend.last_seconds": 3000.5,
        "suspend.last_age_seconds": 600.0,
        "suspend.refused": 1,
    }
    assert facts["xid.count"].value == 0  # the window still applies to Xid


def test_no_sleep_in_a_log_that_reaches_boot_is_zero():
    facts = kl.probe(fake_host(files={"/dev/kmsg": KMSG, "/proc/uptime": UPTIME}))
    assert facts["suspend.count"].value == 0
    assert facts["suspend.last_kind"].unknown == "no sleep since boot"
    assert facts["suspend.refused"].value == 0


def test_no_sleep_in_a_log_that_lost_its_start_is_unknown():
    late = "\n".join(DMESG.splitlines()[2:]) + "\n"  # a ring buffer that begins at 1936 s
    host = fake_host(
        files={"/proc/uptime": UPTIME},
        read_errors={"/dev/kmsg": "not found"},
        commands=[{"argv": ["dmesg"], "rc": 0, "stdout": late, "stderr": ""}],
    )
    facts = kl.probe(host)
    assert facts["suspend.count"].unknown == (
        "the kernel log no longer reaches back to boot (oldest line at 1936.510073 s)"
    )


def test_unreadable_log_leaves_sleeps_unknown():
    host = fake_host(
        read_errors={"/dev/kmsg": "no permission"},
        commands=[{"argv": ["dmesg"], "rc": 1, "stdout": "", "stderr": "dmesg: read kernel buffer failed: "
                   "Operation not permitted\n"}, {"argv": list(kl.JOURNAL), "error": "not found"}],
    )  # fmt: skip
    facts = kl.probe(host)
    assert facts["suspend.count"].unknown == "the kernel log could not be read: no permission"
