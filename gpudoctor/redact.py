"""Redaction of what is meant to be shared: snapshots, `gpudoctor facts`, crash logs, `check --format json`.

What identifies a machine or a person is replaced, the same way everywhere in one piece of output, so
that a redacted snapshot still replays (a path the probes build from a redacted value is the redacted path
that was recorded) and the same thing always reads the same:

- GPU and MIG UUIDs -> `GPU-00000000-0000-0000-0000-00000000000N` (N in order of first appearance),
- non-zero GPU serial numbers -> `REDACTED-SERIAL-<gpu>`,
- the hostname -> `redacted-host`,
- the home directory -> its parent and `<user>` (`/home/alice` -> `/home/<user>`, `/root` -> `/<user>`);
  other directories under `/home` -> `/home/<user2>`, ...; the user name as a whole path component
  elsewhere (`/scratch/alice/env`) -> `<user>`,
- secrets in URLs: the user and password of `https://user:pass@host` -> `https://<redacted>@host`, and
  the value of query parameters that carry a credential (`?token=`, `key=`, `password=`, `sig=` ...).

Everything else is left alone: a redacted report should still say what is wrong. A check's JSON report
(redact_report) keeps the hostname and GPU UUIDs: `gpudoctor fleet` tells nodes apart by them, and a node's
report is about that node; its home directories, user names and URL secrets are redacted.
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass
from typing import Any, Optional

from .facts import Fact, Facts

HOST_PLACEHOLDER = "redacted-host"
USER_PLACEHOLDER = "<user>"
SECRET_PLACEHOLDER = "<redacted>"

_UUID = re.compile(
    r"\b(GPU|MIG)-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
# A UUID this module wrote: left as it is, so redacting twice changes nothing.
_PLACEHOLDER_UUID = re.compile(r"^(GPU|MIG)-00000000-0000-0000-0000-(\d{12})$")
# scheme://userinfo@ -> the userinfo (a user, a password, a token used as a user name) is a secret.
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@?#'\"<>]+@")
# ?token=..., &api_key=..., ;sig=...: parameters whose name says they carry a credential.
_SECRET_PARAM = re.compile(
    r"(?i)([?&;][^=&#\s'\"]*(?:token|key|secret|passw|pwd|sig|auth|credential|session)[^=&#\s'\"]*=)"
    r"[^&#\s'\"]+"
)
_HOME_DIR = re.compile(r"(?<![\w.-])/home/([^/\s:;,'\"<>=]+)")
# User names that are also ordinary path components: replacing those would redact system paths the probes
# read by name (/usr/local, /opt/nvidia) and break the replay. Their home directories are still redacted.
_COMMON_COMPONENTS = frozenset((
    "root", "admin", "user", "users", "local", "lib", "bin", "share", "opt", "usr", "etc", "var", "tmp",
    "home", "data", "src", "nvidia", "cuda", "conda", "python", "ubuntu", "debian", "fedora", "centos",
))  # fmt: skip


@dataclass(frozen=True)
class Identity:
    """What identifies this machine and its user: the values to redact."""

    hostnames: tuple[str, ...] = ()
    homes: tuple[str, ...] = ()
    users: tuple[str, ...] = ()


def this_machine(environ: Optional[dict] = None) -> Identity:
    """The hostname, home directories and user names of the process running gpudoctor (and of the user
    who ran sudo, whose files a `sudo gpudoctor` is often asked about)."""
    env = os.environ if environ is None else environ
    users: list[str] = []
    homes: list[str] = []

    def add(user: Optional[str], home: Optional[str] = None) -> None:
        if user and user not in users:
            users.append(user)
        if home and home not in homes:
            homes.append(home)

    try:
        import pwd

        entry = pwd.getpwuid(os.getuid())
        add(entry.pw_name, entry.pw_dir)
        sudo = env.get("SUDO_USER")
        if sudo:
            try:
                add(sudo, pwd.getpwnam(sudo).pw_dir)
            except KeyError:
                add(sudo)
    except (ImportError, KeyError):
        pass
    add(env.get("USER"), env.get("HOME"))
    add(env.get("LOGNAME"))
    try:
        hostname = socket.gethostname()
    except OSError:
        hostname = ""
    return Identity(hostnames=(hostname,) if hostname else (), homes=tuple(homes), users=tuple(users))


def redact_url_secrets(text: str) -> str:
    """Passwords and tokens in URLs (`https://user:pass@host`, `?token=...`) replaced by `<redacted>`."""
    text = _URL_USERINFO.sub(lambda m: f"{m.group(1)}{SECRET_PLACEHOLDER}@", text)
    return _SECRET_PARAM.sub(lambda m: f"{m.group(1)}{SECRET_PLACEHOLDER}", text)


class Redactor:
    """Replaces identifying values consistently across everything it is given (one instance per output)."""

    def __init__(
        self, identity: Identity = Identity(), serials: Optional[dict[str, str]] = None, uuids: bool = True
    ) -> None:
        self.redacts_uuids = uuids
        self.uuids: dict[str, str] = {}
        self._used_uuid_numbers: set[int] = set()
        # Literal replacements, applied where the value stands as a whole word.
        self.words: dict[str, str] = dict(serials or {})
        for name in sorted(identity.hostnames):
            if len(name) >= 2 and name != "localhost":
                self.words.setdefault(name, HOST_PLACEHOLDER)
        self.users: dict[str, str] = {}  # user name -> placeholder
        for user in identity.users:
            self._user(user)
        # Home directories, longest first, so that /home/alice/x wins over /home/alice.
        homes = {h.rstrip("/") for h in identity.homes if h and h.rstrip("/") and h.rstrip("/") != "/"}
        self.homes: dict[str, str] = {}
        for home in sorted(homes, key=len, reverse=True):
            parent, name = os.path.split(home)
            owner = next(
                (u for u in identity.users if u == name), identity.users[0] if identity.users else name
            )
            self.homes[home] = f"{parent.rstrip('/')}/{self._user(owner)}"

    def _user(self, name: str) -> str:
        if name not in self.users:
            n = len(self.users) + 1
            self.users[name] = USER_PLACEHOLDER if n == 1 else f"<user{n}>"
        return self.users[name]

    def text(self, text: str) -> str:
        if not isinstance(text, str) or not text:
            return text
        if self.redacts_uuids:
            text = _UUID.sub(self._uuid, text)
        for secret, placeholder in self.words.items():
            if secret in text:  # a whole word, not a path component: a host named vm keeps /proc/sys/vm
                text = re.sub(rf"(?<![\w./-]){re.escape(secret)}(?![\w/-])", placeholder, text)
        for home, placeholder in self.homes.items():
            if home in text:
                text = re.sub(rf"(?<![\w.-]){re.escape(home)}(?![\w.-])", placeholder, text)
        if "/home/" in text:
            text = _HOME_DIR.sub(lambda m: "/home/" + self._home_user(m.group(1)), text)
        for user, placeholder in self.users.items():
            if user in text and user not in _COMMON_COMPONENTS and len(user) >= 2:
                text = re.sub(rf"(?<=/){re.escape(user)}(?![\w.-])", placeholder, text)
        if "://" in text or "=" in text:
            text = redact_url_secrets(text)
        return text

    def _home_user(self, name: str) -> str:
        if name.startswith("<") and name.endswith(">"):  # already a placeholder
            return name
        return self._user(name)

    def _uuid(self, m: re.Match) -> str:
        found = m.group(0)
        if found not in self.uuids:
            done = _PLACEHOLDER_UUID.match(found)
            if done:
                self.uuids[found] = found
                self._used_uuid_numbers.add(int(done.group(2)))
            else:
                n = len(self.uuids)
                while n in self._used_uuid_numbers:
                    n += 1
                self._used_uuid_numbers.add(n)
                self.uuids[found] = f"{m.group(1)}-00000000-0000-0000-0000-{n:012d}"
        return self.uuids[found]

    def path(self, directory: str, name: str) -> str:
        """A name listed in `directory`, as the redacted listing shows it: the last component of the redacted
        path, so that the probes, joining the two on replay, reach the redacted path that was recorded."""
        joined = self.text(directory.rstrip("/") + "/" + name)
        return joined.rsplit("/", 1)[-1] if "/" in joined else self.text(name)

    def value(self, value: Any) -> Any:
        """Any plain data (str, list, tuple, dict, numbers), redacted throughout, keys included."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self.value(v) for v in value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        return value


def redact_facts(facts: Any, identity: Identity) -> Any:
    """`gpudoctor facts`, redacted: every value, source and reason of a Facts tree (gpudoctor.facts)."""

    hostname = facts.value("host.hostname")
    names = identity.hostnames + ((hostname,) if isinstance(hostname, str) and hostname else ())
    r = Redactor(Identity(names, identity.homes, identity.users))
    items = {
        name: Fact(
            value=r.value(fact.value),
            source=r.text(fact.source),
            unknown=r.text(fact.unknown) if fact.unknown is not None else None,
        )
        for name, fact in facts.items()
    }
    return Facts(items, {k: r.text(v) for k, v in facts.missing.items()})


def redact_report(data: Any, identity: Identity) -> Any:
    """A check's JSON report data (report/json_report.py), its home directories, user names and URL secrets
    redacted as `facts` redacts them; the hostname and GPU UUIDs are kept (see above)."""
    return Redactor(Identity((), identity.homes, identity.users), uuids=False).value(data)
