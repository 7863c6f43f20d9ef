"""Why the nvidia kernel module does not load: Secure Boot, nouveau, and a kernel it was not built for.

Produces `boot.*` (UEFI, Secure Boot, the kernel's lockdown and module signature enforcement),
`nvidia_module.*` (the nvidia.ko installed for the running kernel, its signature, and the kernels that have
one) and `nouveau.*` (loaded, blacklisted). Only reads: a few small sysfs/procfs files, the modprobe.d
files, and `modinfo` (time-boxed) for the running kernel, and for the other installed kernels only when the
running one has no nvidia module.

- Secure Boot: efivarfs shows each UEFI variable as a file whose first 4 bytes are its attributes (little
  endian) and the rest its data (Linux Documentation/filesystems/efivarfs.rst, commit 2dcc51b3fe17); the
  SecureBoot variable of the EFI global variable GUID 8be4df61-93ca-11d2-aa0d-00e098032b8c holds one byte,
  1 when Secure Boot is on. The kernel counts Secure Boot as off when that variable is missing, when it is
  0, or when SetupMode is 1 (drivers/firmware/efi/libstub/secureboot.c, efi_get_secureboot, torvalds/linux
  @147ae83bf4e1); so does this probe (mokutil --sb-state too: lcp/mokutil, "secureboot == 1 && setupmode ==
  0"). No /sys/firmware/efi: booted through the BIOS, no Secure Boot.
- Whether the kernel refuses an unsigned module: module.sig_enforce (/sys/module/module/parameters/
  sig_enforce, Y or N; the parameter exists only in a kernel built with CONFIG_MODULE_SIG), else the lockdown
  LSM at `integrity` or `confidentiality` (kernel/module/signing.c, module_sig_check, torvalds/linux
  @14e77332e746: "if (is_module_sig_enforced()) ... return -EKEYREJECTED; return
  security_locked_down(LOCKDOWN_MODULE_SIGNATURE)"). /sys/kernel/security/lockdown reads e.g. "none
  [integrity] confidentiality", the bracketed word the mode (security/lockdown/lockdown.c, lockdown_read,
  torvalds/linux@000d388ed3bb; the file is mode 0600, so only root reads it: Secure Boot's state, which
  every user can read, stands in for it).
- The module's signature: `modinfo` prints `sig_id`, `signer`, `sig_key` and `sig_hashalgo` for a module
  with an appended signature, none of them for an unsigned one (the kernel's module-signing.rst: "A signed
  module has a digital signature simply appended at the end"); /sys/module/nvidia/ has nothing until the
  module is loaded, which is exactly what fails.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple, Optional

from ..facts import Fact, FactSpec, known, unknown
from ..host.base import NOT_FOUND, HostError
from ..host.base import read_or_reason as _read
from . import ProbeSpec

FACT_SPECS: tuple[FactSpec, ...] = (
    FactSpec("boot.uefi", "bool", "", "the kernel was booted through UEFI (/sys/firmware/efi exists)"),
    FactSpec(
        "boot.secure_boot",
        "bool",
        "",
        "UEFI Secure Boot is on: the SecureBoot EFI variable (efivarfs) is 1 and SetupMode is not 1; off "
        "when the variable is missing (the kernel's own rule); unknown on a BIOS boot (no UEFI)",
    ),
    FactSpec(
        "boot.lockdown",
        "str",
        "",
        "the kernel lockdown mode (/sys/kernel/security/lockdown, readable by root only): none, integrity or "
        "confidentiality; integrity and above refuse unsigned modules",
    ),
    FactSpec(
        "boot.module_sig_enforce",
        "bool",
        "",
        "the kernel refuses modules without a valid signature (module.sig_enforce, "
        "/sys/module/module/parameters/sig_enforce; false where the kernel checks no signature)",
    ),
    FactSpec(
        "nvidia_module.for_running_kernel",
        "bool",
        "",
        "an nvidia kernel module is installed for the running kernel (`modinfo -k $(uname -r) nvidia` "
        "finds it)",
    ),
    FactSpec(
        "nvidia_module.file", "str", "", "the nvidia.ko file modprobe would load for the running kernel"
    ),
    FactSpec("nvidia_module.version", "str", "", "that module's version (modinfo `version`)"),
    FactSpec(
        "nvidia_module.signed",
        "bool",
        "",
        "that module carries an appended signature (modinfo lists sig_id or signer); says nothing of "
        "whether the kernel trusts the key",
    ),
    FactSpec("nvidia_module.signer", "str", "", "who signed it (modinfo `signer`); empty when unsigned"),
    FactSpec(
        "nvidia_module.other_kernels",
        "list[str]",
        "",
        "installed kernels (/lib/modules) other than the running one that have an nvidia module; looked "
        "for only when the running kernel has none",
    ),
    FactSpec("nvidia_module.other_kernel_count", "int", "", "how many are in nvidia_module.other_kernels"),
    FactSpec("nouveau.loaded", "bool", "", "the nouveau module is loaded (/proc/modules)"),
    FactSpec(
        "nouveau.blacklisted",
        "bool",
        "",
        "a `blacklist nouveau` line in a modprobe.d file modprobe reads, or modprobe.blacklist=nouveau on "
        "the kernel command line",
    ),
    FactSpec("nouveau.blacklisted_by", "list[str]", "", "the files (or /proc/cmdline) that blacklist it"),
)
PROBE = ProbeSpec("kernel_modules")

EFI = "/sys/firmware/efi"
EFI_GLOBAL = "8be4df61-93ca-11d2-aa0d-00e098032b8c"  # EFI_GLOBAL_VARIABLE_GUID (include/linux/efi.h)
SECURE_BOOT_VAR = f"{EFI}/efivars/SecureBoot-{EFI_GLOBAL}"
SETUP_MODE_VAR = f"{EFI}/efivars/SetupMode-{EFI_GLOBAL}"
LOCKDOWN = "/sys/kernel/security/lockdown"
SIG_ENFORCE = "/sys/module/module/parameters/sig_enforce"
OSRELEASE = "/proc/sys/kernel/osrelease"
MODULES_DIR = "/lib/modules"
PROC_MODULES = "/proc/modules"
CMDLINE = "/proc/cmdline"
MODINFO = ("modinfo", "/sbin/modinfo", "/usr/sbin/modinfo")
MODULE = "nvidia"
# modprobe.d(5): these directories, in this order; a file of the same name in an earlier one overrides the
# later ones (/etc overrides the packages' /usr/lib).
MODPROBE_DIRS = ("/etc/modprobe.d", "/run/modprobe.d", "/usr/local/lib/modprobe.d", "/usr/lib/modprobe.d",
                 "/lib/modprobe.d")  # fmt: skip
MAX_KERNELS = 16
MAX_CONF_FILES = 200
# A kernel release as it names a /lib/modules directory; it goes into modinfo's argv, so nothing else.
_RELEASE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+~-]{0,127}")
LOCKDOWN_MODES = ("none", "integrity", "confidentiality")


# --- pure parsers --------------------------------------------------------------------------------------


def efi_variable(data: str) -> Optional[bytes]:
    """The data of an efivarfs file (its first 4 bytes are the variable's attributes), or None if shorter.
    The Host decodes files as UTF-8; every byte of these small variables is below 0x80 or the file is not
    what it should be."""
    raw = data.encode("utf-8", errors="strict")
    return raw[4:] if len(raw) > 4 else None


def lockdown_mode(text: str) -> Optional[str]:
    """The bracketed mode of /sys/kernel/security/lockdown ("none [integrity] confidentiality")."""
    m = re.search(r"\[([a-z]+)\]", text)
    return m.group(1) if m and m.group(1) in LOCKDOWN_MODES else None


class ModInfo(NamedTuple):
    file: str
    version: str
    signer: str
    signed: bool


def parse_modinfo(text: str) -> ModInfo:
    """The fields of `modinfo` output ("key:   value" lines) that say where the module is, who signed it."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key and " " not in key and key not in fields:
            fields[key] = value.strip()
    if "filename" not in fields:
        raise ValueError("no filename: line")
    signed = bool(fields.get("sig_id") or fields.get("signer"))
    return ModInfo(fields["filename"], fields.get("version", ""), fields.get("signer", ""), signed)


def parse_module(text: str, name: str) -> Optional[dict[str, Any]]:
    """The /proc/modules line of `name` ("nouveau 843331 2 - Live 0x..."; proc(5)): {"refcount": int or
    None (`-`), "used_by": [module, ...]}; None when the module is not loaded. Columns: name, size, use
    count, users (`-`: none), state, address. This probe's nouveau.loaded and the power probe's
    nvidia_uvm.* read it (interconnect.parse_modules lists the names alone)."""
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[0] == name:
            refcount = int(fields[2]) if fields[2].isdigit() else None
            users = [u for u in fields[3].split(",") if u and u != "-"]
            return {"refcount": refcount, "used_by": users}
    return None


def blacklists(conf: str, name: str) -> bool:
    """Whether a modprobe.d file has a `blacklist <name>` line (modprobe.d(5); # starts a comment)."""
    for line in conf.splitlines():
        words = line.split("#", 1)[0].split()
        if words[:1] == ["blacklist"] and words[1:2] == [name]:
            return True
    return False


def cmdline_blacklists(cmdline: str, name: str) -> bool:
    """modprobe.blacklist=a,b,c on the kernel command line (modprobe.d(5): modprobe reads it too)."""
    for word in cmdline.split():
        key, _, value = word.partition("=")
        if key == "modprobe.blacklist" and name in value.split(","):
            return True
    return False


# --- probe ----------------------------------------------------------------------------------------------


def probe(host: Any) -> dict[str, Fact]:
    facts: dict[str, Fact] = {}
    facts.update(_boot(host))
    facts.update(_nvidia_module(host))
    facts.update(_nouveau(host))
    return facts


def _boot(host: Any) -> dict[str, Fact]:
    out: dict[str, Fact] = {}
    try:
        uefi = "efi" in host.listdir("/sys/firmware")
        out["boot.uefi"] = known(uefi, EFI)
    except HostError as e:
        uefi = None
        out["boot.uefi"] = unknown(e.reason, EFI)
    out["boot.secure_boot"] = _secure_boot(host, uefi)
    text, why = _read(host, LOCKDOWN)
    if text is None:
        reason = "no lockdown LSM, or securityfs not mounted here" if why == NOT_FOUND else why
        out["boot.lockdown"] = unknown(reason, LOCKDOWN)
    else:
        mode = lockdown_mode(text)
        out["boot.lockdown"] = (
            known(mode, LOCKDOWN) if mode else unknown(f"unrecognised: {text.strip()[:40]!r}", LOCKDOWN)
        )
    text, why = _read(host, SIG_ENFORCE)
    if text is None:
        # The parameter exists in every kernel built with CONFIG_MODULE_SIG; without it nothing is checked.
        enforce = known(False, SIG_ENFORCE) if why == NOT_FOUND else unknown(why, SIG_ENFORCE)
    elif text.strip() in ("Y", "N"):
        enforce = known(text.strip() == "Y", SIG_ENFORCE)
    else:
        enforce = unknown(f"unrecognised: {text.strip()[:20]!r}", SIG_ENFORCE)
    out["boot.module_sig_enforce"] = enforce
    return out


def _secure_boot(host: Any, uefi: Optional[bool]) -> Fact:
    src = SECURE_BOOT_VAR
    if uefi is None:
        return unknown(f"{EFI} could not be listed", src)
    if not uefi:
        return unknown("not booted through UEFI (BIOS boot): no Secure Boot", src)
    text, why = _read(host, SECURE_BOOT_VAR)
    if text is None:
        # The kernel: SecureBoot EFI_NOT_FOUND -> efi_secureboot_mode_disabled.
        return known(False, src) if why == NOT_FOUND else unknown(why, src)
    try:
        data = efi_variable(text)
    except UnicodeEncodeError:
        data = None
    if not data or data[0] not in (0, 1):
        return unknown(f"unexpected SecureBoot variable {text.encode('utf-8', 'replace')[:8]!r}", src)
    if data[0] == 0:
        return known(False, src)
    # In Setup Mode the firmware itself sets SecureBoot to 0 (UEFI spec, Secure Boot mode transitions); the
    # kernel and mokutil check SetupMode too, so a SetupMode of 1 turns it off here as well. A SetupMode
    # that cannot be read leaves SecureBoot's word standing.
    setup, _ = _read(host, SETUP_MODE_VAR)
    try:
        mode = efi_variable(setup) if setup is not None else None
    except UnicodeEncodeError:
        mode = None
    if mode and mode[0] == 1:
        return known(False, f"{src}, {SETUP_MODE_VAR}")
    return known(True, src)


def _modinfo(host: Any, kernel: str) -> tuple[Optional[ModInfo], Optional[str]]:
    """(the nvidia module's info, None) for `kernel`; (None, None) when it has none; (None, why) unknown."""
    result = None
    for program in MODINFO:
        try:
            result = host.run((program, "-k", kernel, MODULE))
            break
        except HostError as e:
            if e.reason != NOT_FOUND:
                return None, f"modinfo: {e.reason}"
    if result is None:
        return None, "modinfo not found"
    if result.rc != 0:
        if "not found" in result.stderr:  # "modinfo: ERROR: Module nvidia not found."
            return None, None
        return None, f"modinfo failed (rc={result.rc}): {result.stderr.strip()[:60]}"
    try:
        return parse_modinfo(result.stdout), None
    except ValueError as e:
        return None, f"modinfo: {e}"


def _nvidia_module(host: Any) -> dict[str, Fact]:
    names = ("nvidia_module.for_running_kernel", "nvidia_module.file", "nvidia_module.version",
             "nvidia_module.signed", "nvidia_module.signer", "nvidia_module.other_kernels",
             "nvidia_module.other_kernel_count")  # fmt: skip
    release, why = _read(host, OSRELEASE)
    release = (release or "").strip()
    if not _RELEASE.fullmatch(release):
        bad = unknown(f"the running kernel's release: {why or repr(release[:40])}", OSRELEASE)
        return dict.fromkeys(names, bad)
    src = f"modinfo -k {release} nvidia"
    try:
        kernels = sorted(k for k in host.listdir(MODULES_DIR) if _RELEASE.fullmatch(k))
    except HostError as e:
        return dict.fromkeys(names, unknown(f"{MODULES_DIR}: {e.reason}", MODULES_DIR))
    if release not in kernels:
        # A container (its own /lib/modules, or none), or the running kernel's package removed since boot:
        # nothing here says what the running kernel would load.
        why = f"{MODULES_DIR}/{release} is not here (in a container, the host's modules are not visible)"
        return dict.fromkeys(names, unknown(why, MODULES_DIR))
    info, why = _modinfo(host, release)
    if why is not None:
        return dict.fromkeys(names, unknown(why, src))
    if info is not None:
        not_looked = unknown("not looked for: the running kernel has an nvidia module", MODULES_DIR)
        return {
            "nvidia_module.for_running_kernel": known(True, src),
            "nvidia_module.file": known(info.file, src),
            "nvidia_module.version": known(info.version, src),
            "nvidia_module.signed": known(info.signed, src),
            "nvidia_module.signer": known(info.signer, src),
            "nvidia_module.other_kernels": not_looked,
            "nvidia_module.other_kernel_count": not_looked,
        }
    none_here = unknown(f"no nvidia module for the running kernel {release}", src)
    out = {"nvidia_module.for_running_kernel": known(False, src)}
    out.update(dict.fromkeys(names[1:5], none_here))
    others = _other_kernels(host, [k for k in kernels if k != release])
    out["nvidia_module.other_kernels"] = others
    out["nvidia_module.other_kernel_count"] = (
        known(len(others.value), others.source) if others.known else others
    )
    return out


def _other_kernels(host: Any, kernels: list[str]) -> Fact:
    src = f"{MODULES_DIR}/*, modinfo -k <kernel> nvidia"
    found = []
    for kernel in kernels[:MAX_KERNELS]:
        info, why = _modinfo(host, kernel)
        if why is not None:
            return unknown(f"kernel {kernel}: {why}", src)
        if info is not None:
            found.append(kernel)
    return known(found, src)


def _nouveau(host: Any) -> dict[str, Fact]:
    out: dict[str, Fact] = {}
    text, why = _read(host, PROC_MODULES)
    loaded = None if text is None else parse_module(text, "nouveau") is not None
    out["nouveau.loaded"] = unknown(why, PROC_MODULES) if loaded is None else known(loaded, PROC_MODULES)
    by, why = _blacklisted_by(host)
    src = f"{', '.join(MODPROBE_DIRS)} (*.conf), {CMDLINE}"
    if by is None:
        out["nouveau.blacklisted"] = out["nouveau.blacklisted_by"] = unknown(why, src)
    else:
        out["nouveau.blacklisted"] = known(bool(by), src)
        out["nouveau.blacklisted_by"] = known(by, src)
    return out


def _blacklisted_by(host: Any) -> tuple[Optional[list[str]], str]:
    """The files (and /proc/cmdline) that blacklist nouveau, or (None, why unknown)."""
    seen: set[str] = set()
    by: list[str] = []
    for directory in MODPROBE_DIRS:
        try:
            names = sorted(n for n in host.listdir(directory) if n.endswith(".conf"))[:MAX_CONF_FILES]
        except HostError as e:
            if e.reason == NOT_FOUND:
                continue
            return None, f"{directory}: {e.reason}"
        for name in names:
            if name in seen:
                continue  # overridden by the file of the same name in an earlier directory
            seen.add(name)
            path = f"{directory}/{name}"
            text, why = _read(host, path)
            if text is None:
                if why == NOT_FOUND:  # a dangling link (a file masked with /dev/null reads empty)
                    continue
                return None, f"{path}: {why}"
            if blacklists(text, "nouveau"):
                by.append(path)
    cmdline, why = _read(host, CMDLINE)
    if cmdline is None:
        return None, f"{CMDLINE}: {why}"
    if cmdline_blacklists(cmdline, "nouveau"):
        by.append(CMDLINE)
    return by, ""
