"""Remote rule packs: fetched only with a pinned sha256, bounded in time and size, and every failure is a
loader Problem naming the URL and the reason. Served from a local HTTP server on 127.0.0.1."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from gpudoctor.engine import remote, yamlsafe
from gpudoctor.engine.loader import RuleLoadError, load_rules

from conftest import H200, run_cli

ROOT = Path(__file__).parents[2]
PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")

# Fires on the H200 fixture (driver branch 580), so `check --fail-on error` exits 1 because of it.
FIRING = b"""\
rules:
  - id: ACME-DRIVER-001
    title: Our cluster pins driver branch 575
    severity: error
    category: driver
    when: {fact: driver.branch, ne: 575}
    message: "Driver branch {driver.branch} is not the cluster's 575."
    why: Our images are validated on 575 only.
    silent: A site policy on the driver branch; no program fails on another branch.
"""
QUIET = FIRING.replace(b"ne: 575", b"eq: 575").replace(b"ACME-DRIVER-001", b"ACME-DRIVER-002")
TAMPERED = FIRING.replace(b"severity: error", b"severity: info ")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # a body without Content-Length ends when the connection closes
    requests: list = []
    sent: dict = {}

    def log_message(self, *args):  # keep test output clean
        pass

    def _send(self, body: bytes, status: int = 200, length: bool = True, headers: tuple = ()) -> None:
        self.send_response(status)
        if length:
            self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802 - http.server's name
        Handler.requests.append(self.path)
        path = self.path
        if path == "/pack.yaml":
            self._send(FIRING)
        elif path == "/quiet.yaml":
            self._send(QUIET)
        elif path == "/tampered.yaml":
            self._send(TAMPERED)
        elif path == "/binary.yaml":
            self._send(b"\xff\xfe\x00junk")
        elif path == "/redirect.yaml":
            self._send(b"", 302, headers=(("Location", "/pack.yaml"),))
        elif path == "/loop.yaml":
            self._send(b"", 302, headers=(("Location", "/loop.yaml"),))
        elif path == "/declared-huge.yaml":
            self.send_response(200)
            self.send_header("Content-Length", str(100 * 1024 * 1024))
            self.end_headers()
            self.wfile.write(b"rules: []\n")
        elif path == "/huge.yaml":  # no Content-Length: only counting while streaming catches it
            self.send_response(200)
            self.end_headers()
            Handler.sent[path] = 0
            try:
                for _ in range(64 * 16):  # up to 64 MiB, until the client hangs up
                    self.wfile.write(b"#" * 65536)
                    Handler.sent[path] += 65536
            except OSError:
                pass
        elif path == "/gzip-bomb.yaml":
            body = gzip.compress(b"#" * (32 * 1024 * 1024))
            self._send(body, headers=(("Content-Encoding", "gzip"),))
        elif path == "/slow.yaml":  # headers at once, then silence longer than the read timeout
            self.send_response(200)
            self.end_headers()
            self.wfile.flush()
            time.sleep(2)
            self.wfile.write(FIRING)
        elif path == "/drip.yaml":  # never silent for long enough to trip a read timeout
            self.send_response(200)
            self.end_headers()
            try:
                for _ in range(100):
                    self.wfile.write(b"#")
                    self.wfile.flush()
                    time.sleep(0.05)
            except OSError:
                pass
        else:
            self._send(b"not here\n", 404)


@pytest.fixture(scope="module")
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    httpd.block_on_close = False
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch):
    for var in PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    Handler.requests.clear()


def pinned(url: str, data: bytes) -> str:
    return f"{url}#sha256={sha(data)}"


# --- fetch and verify ------------------------------------------------------------------------------------


def test_a_pinned_pack_is_fetched_verified_and_loaded(server):
    text, name = remote.fetch(pinned(f"{server}/pack.yaml", FIRING))
    assert text == FIRING.decode() and name == f"{server}/pack.yaml"
    rules = load_rules([pinned(f"{server}/pack.yaml", FIRING)], include_shipped=False)
    assert [(r.id, r.file) for r in rules] == [("ACME-DRIVER-001", f"{server}/pack.yaml")]


def test_upper_case_pin_and_redirect_are_fine(server):
    text, _ = remote.fetch(f"{server}/redirect.yaml#sha256={sha(FIRING).upper()}")
    assert text == FIRING.decode()
    assert Handler.requests == ["/redirect.yaml", "/pack.yaml"]


@pytest.mark.parametrize(
    "fragment",
    ["", "#", "#sha256=", f"#sha256={sha(FIRING)[:63]}", f"#sha256={sha(FIRING)}0",
     f"#md5={sha(FIRING)[:32]}",
     f"#SHA256={sha(FIRING)}", "#sha256=" + "g" * 64],
)  # fmt: skip
def test_a_url_without_a_valid_pin_is_refused_before_any_request(server, fragment):
    with pytest.raises(remote.RemoteError, match="must pin its content.*#sha256="):
        remote.fetch(f"{server}/pack.yaml{fragment}")
    assert Handler.requests == []


def test_a_tampered_pack_is_refused_with_both_hashes_and_nothing_is_kept(server, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    url = pinned(f"{server}/tampered.yaml", FIRING)  # pins the original; the server sends another text
    with pytest.raises(remote.RemoteError) as info:
        remote.fetch(url)
    assert f"the URL pins {sha(FIRING)} but the server sent {sha(TAMPERED)}" in str(info.value)
    with pytest.raises(remote.RemoteError, match="sha256 mismatch"):
        remote.fetch(url)  # asked again: refused again, no verified-once copy to fall back to
    assert Handler.requests == ["/tampered.yaml", "/tampered.yaml"]
    assert list(tmp_path.rglob("*")) == []  # nothing written anywhere
    assert remote.fetch(pinned(f"{server}/tampered.yaml", TAMPERED))[0] == TAMPERED.decode()


def test_a_pack_streamed_beyond_the_cap_is_refused_without_reading_it_all(server):
    started = time.monotonic()
    with pytest.raises(remote.RemoteError, match="larger than 1024 KiB"):
        remote.fetch(f"{server}/huge.yaml#sha256={'0' * 64}")
    assert time.monotonic() - started < 5
    time.sleep(0.2)  # let the server notice the hang-up
    assert Handler.sent["/huge.yaml"] < 16 * 1024 * 1024


def test_the_cap_is_the_rule_file_cap(server, monkeypatch):
    monkeypatch.setattr(yamlsafe, "MAX_BYTES", 100)
    with pytest.raises(remote.RemoteError, match="larger than 0 KiB"):
        remote.fetch(pinned(f"{server}/pack.yaml", FIRING))


def test_a_declared_huge_pack_is_refused_from_its_headers(server):
    with pytest.raises(remote.RemoteError, match="larger than 1024 KiB"):
        remote.fetch(f"{server}/declared-huge.yaml#sha256={'0' * 64}")


def test_a_gzip_bomb_is_capped_on_the_unpacked_size(server):
    started = time.monotonic()
    with pytest.raises(remote.RemoteError, match="larger than 1024 KiB"):
        remote.fetch(f"{server}/gzip-bomb.yaml#sha256={'0' * 64}")
    assert time.monotonic() - started < 5


def test_a_server_silent_beyond_the_read_timeout(server):
    started = time.monotonic()
    with pytest.raises(remote.RemoteError, match=r"timed out \(connect 1 s, read 0.3 s\)"):
        remote.fetch(pinned(f"{server}/slow.yaml", FIRING), timeout=(1, 0.3))
    assert time.monotonic() - started < 1.5


def test_a_server_dripping_bytes_hits_the_deadline(server):
    started = time.monotonic()
    with pytest.raises(remote.RemoteError, match="no complete answer within 0.5 s"):
        remote.fetch(f"{server}/drip.yaml#sha256={'0' * 64}", timeout=(1, 1), deadline=0.5)
    assert time.monotonic() - started < 1.5


def test_the_default_timeouts_are_module_settings(server, monkeypatch):
    monkeypatch.setattr(remote, "TIMEOUT", (1, 0.3))
    with pytest.raises(remote.RemoteError, match="timed out"):
        remote.fetch(pinned(f"{server}/slow.yaml", FIRING))


def test_http_errors_and_connection_failures(server):
    with pytest.raises(remote.RemoteError, match="^HTTP 404 Not Found$"):
        remote.fetch(f"{server}/missing.yaml#sha256={'0' * 64}")
    with pytest.raises(remote.RemoteError, match="more than 5 redirects"):
        remote.fetch(f"{server}/loop.yaml#sha256={'0' * 64}")
    closed = _closed_port()
    with pytest.raises(remote.RemoteError, match="connection refused"):
        remote.fetch(f"http://127.0.0.1:{closed}/pack.yaml#sha256={'0' * 64}")


def test_binary_junk_with_the_right_pin_is_not_text(server):
    data = b"\xff\xfe\x00junk"
    with pytest.raises(remote.RemoteError, match="not UTF-8"):
        remote.fetch(pinned(f"{server}/binary.yaml", data))


@pytest.mark.parametrize(
    "url, reason",
    [
        (f"ftp://example.com/p.yaml#sha256={'0' * 64}", "only http:// and https://"),
        (f"file:///etc/passwd#sha256={'0' * 64}", "only http:// and https://"),
        (f"http:///p.yaml#sha256={'0' * 64}", "names no host"),
        (f"http://[::1/p.yaml#sha256={'0' * 64}", "not a valid URL"),
    ],
)
def test_urls_that_are_not_fetched(url, reason):
    with pytest.raises(remote.RemoteError, match=reason):
        remote.fetch(url)


def test_display_name_hides_credentials_query_and_pin():
    url = f"https://user:secret@example.com/p.yaml?X-Amz-Signature=abc#sha256={'0' * 64}"
    assert remote.display_name(url) == "https://example.com/p.yaml?..."


# --- through the loader and the command line ---------------------------------------------------------------


def test_fetch_failures_are_loader_problems_with_url_and_reason(server, tmp_path):
    good = tmp_path / "good.yaml"
    good.write_bytes(QUIET)
    with pytest.raises(RuleLoadError) as info:
        load_rules(
            [
                str(good),
                pinned(f"{server}/tampered.yaml", FIRING),
                f"{server}/pack.yaml",
                f"{server}/missing.yaml#sha256={'0' * 64}",
            ],
            include_shipped=False,
        )
    shown = [str(p) for p in info.value.problems]
    assert shown[0].startswith(f"{server}/tampered.yaml:0: sha256 mismatch")
    assert shown[1].startswith(f"{server}/pack.yaml:0: a remote rule pack must pin its content")
    assert shown[2] == f"{server}/missing.yaml:0: HTTP 404 Not Found"
    assert len(shown) == 3


def test_a_remote_rule_overriding_a_local_one_follows_the_usual_rules(server, tmp_path):
    local = tmp_path / "local.yaml"
    local.write_bytes(FIRING)
    with pytest.raises(RuleLoadError, match="duplicate id"):
        load_rules([str(local), pinned(f"{server}/pack.yaml", FIRING)], include_shipped=False)


def test_requests_is_imported_only_for_a_url():
    code = (
        "import sys; from gpudoctor.engine.loader import load_rules; load_rules([]); "
        "print('requests' in sys.modules)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.stdout.strip() == "False", r.stderr


def gd(*args):
    return run_cli(*args, env={"NO_PROXY": "127.0.0.1,localhost"}, drop=PROXY_VARS)


def test_cli_check_with_a_remote_pack_exits_as_its_rules_imply(server):
    fired = gd("check", "--snapshot", str(H200), "--rules", pinned(f"{server}/pack.yaml", FIRING))
    assert fired.returncode == 1, fired.stderr
    assert "ACME-DRIVER-001" in fired.stdout and "Driver branch 580 is not the cluster's 575." in fired.stdout
    quiet = gd("check", "--snapshot", str(H200), "--rules", pinned(f"{server}/quiet.yaml", QUIET))
    assert quiet.returncode == 0, quiet.stderr
    assert "ACME-DRIVER-002" not in quiet.stdout


def test_cli_refuses_a_tampered_or_unpinned_pack_with_exit_2(server):
    tampered = gd("check", "--snapshot", str(H200), "--rules", pinned(f"{server}/tampered.yaml", FIRING))
    assert tampered.returncode == 2
    assert f"{server}/tampered.yaml:0: sha256 mismatch" in tampered.stderr
    assert sha(FIRING) in tampered.stderr and sha(TAMPERED) in tampered.stderr
    unpinned = gd("rules", "validate", f"{server}/pack.yaml")
    assert unpinned.returncode == 2 and "must pin its content" in unpinned.stderr
    valid = gd("rules", "validate", pinned(f"{server}/pack.yaml", FIRING))
    assert (valid.returncode, valid.stdout) == (0, "1 rule(s) valid\n")


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_worker_does_not_outlive_the_deadline_for_long(server):
    with pytest.raises(remote.RemoteError, match="no complete answer"):
        remote.fetch(f"{server}/drip.yaml#sha256={'0' * 64}", timeout=(1, 1), deadline=0.3)
    time.sleep(0.5)
    assert not [t for t in threading.enumerate() if t.name == "gpudoctor-fetch"]


class _Left:
    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def remaining(self) -> float:
        return max(0.0, self.end - time.monotonic())


def test_a_fetch_obeys_the_checks_deadline_too(server):
    started = time.monotonic()
    with pytest.raises(RuleLoadError) as e:
        load_rules([f"{server}/drip.yaml#sha256={'0' * 64}"], deadline=_Left(0.5))
    assert time.monotonic() - started < 1.5  # not remote.DEADLINE's 15 s, nor the drip's 5 s
    assert re.search(
        r"drip.yaml:0: no complete answer within 0?\.[0-9]+ s \(the check's --timeout\)", str(e.value)
    )
    with pytest.raises(RuleLoadError, match=r"not fetched: the check's deadline \(--timeout\) has passed"):
        load_rules([pinned(f"{server}/pack.yaml", FIRING)], deadline=_Left(0))


def test_cli_check_timeout_bounds_a_remote_pack(server):
    started = time.monotonic()
    r = gd(
        "check", "--snapshot", str(H200), "--timeout", "1", "--rules", f"{server}/drip.yaml#sha256={'0' * 64}"
    )
    assert r.returncode == 2, r.stderr
    assert "the check's --timeout" in r.stderr
    assert time.monotonic() - started < 4.5  # the pack drips for 5 s
