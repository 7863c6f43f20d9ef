"""A real package index on loopback, for the tests that run gpudoctor's pip and uv commands end to end.

gpudoctor's fix plans name a package index (`--index-url <an index>/whl/cu124`); the tests rewrite its host
to this one and let the real installers fetch from it, so what is proved is what pip and uv do over HTTP
(resolution, downloads, an interrupted download), not what a mock says. offline_env keeps them from any
other index and from the user's configuration.
"""

from __future__ import annotations

import hashlib
import html
import os
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Optional

# Where an installer goes when no index is given: the discard port on loopback, refused at once, so a
# command that lost its --index-url fails instead of reaching a real registry.
NO_INDEX = "http://127.0.0.1:9/simple"


def normalise(name: str) -> str:
    """A project name as PEP 503 compares it: lowercase, runs of - _ . as one -."""
    return re.sub(r"[-_.]+", "-", name).lower()


class LocalIndex:
    """A PEP 503 simple index of the .whl files in `wheel_dir`, over HTTP on 127.0.0.1 (a port the OS picks),
    answering under any path prefix: GET <prefix>/<project>/ lists that project's wheels (404 for one it
    has none of), /files/<wheel> serves one. The directory is read again for every request, so wheels added
    after the start are found. `requests` lists the paths asked for; hold() stalls a download mid-body."""

    def __init__(self, wheel_dir: Path) -> None:
        self.wheel_dir = Path(wheel_dir)
        self.held = threading.Event()  # set when a held download has started (its body half sent)
        self._lock = threading.Lock()
        self._requests: list[str] = []
        self._holds: list[list] = []  # [prefix, gate, downloads still to let through]
        self._closed = False
        handler = type("Handler", (_Handler,), {"index": self})
        self._server = _Server(("127.0.0.1", 0), handler)
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True, name="LocalIndex"
        )
        self._thread.start()

    def url(self, prefix: str = "simple") -> str:
        """The index's URL under `prefix`: url("whl/cu124") -> http://127.0.0.1:PORT/whl/cu124."""
        return f"http://127.0.0.1:{self.port}/{prefix.strip('/')}".rstrip("/")

    def local(self, url: str) -> str:
        """`url` with its scheme and host replaced by this index's, its path kept: a planned --index-url as
        the test runs it."""
        return self.url(urllib.parse.urlsplit(url).path)

    @property
    def requests(self) -> list[str]:
        """The paths requested so far (unquoted, without a query), oldest first."""
        with self._lock:
            return list(self._requests)

    def hold(self, prefix: str, skip: int = 0) -> None:
        """Make every download of a wheel whose filename starts with `prefix` send its headers and half its
        body, set `held`, and wait until release() or close(); the first `skip` such downloads go through
        (an installer's dry run fetches the wheel before the install does). An installer's read timeout
        still runs (pip's --timeout, 15 s by default; uv's UV_HTTP_TIMEOUT, 30 s)."""
        with self._lock:
            self._holds.append([prefix, threading.Event(), skip])

    def release(self) -> None:
        """Let the held downloads finish and hold no more (`held` stays set: clear it to wait for another)."""
        with self._lock:
            holds, self._holds = self._holds, []
        for _prefix, gate, _skip in holds:
            gate.set()

    def close(self) -> None:
        """Stop serving; held downloads are let go first, so this does not wait on them."""
        with self._lock:
            self._closed = True
        self.release()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> LocalIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- for the handler ---------------------------------------------------------------------------------

    def _record(self, path: str) -> None:
        with self._lock:
            self._requests.append(path)

    def _gate(self, filename: str) -> Optional[threading.Event]:
        with self._lock:
            if self._closed:
                return None
            for hold in self._holds:
                prefix, gate, skip = hold
                if filename.startswith(prefix):
                    if skip > 0:
                        hold[2] = skip - 1
                        return None
                    return gate
            return None

    def _wheels(self) -> dict[str, list[Path]]:
        projects: dict[str, list[Path]] = {}
        for path in sorted(self.wheel_dir.glob("*.whl")):
            projects.setdefault(normalise(path.name.split("-")[0]), []).append(path)
        return projects


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        """Quiet: an installer that hangs up (a test interrupted it) is not an error of the index."""


class _Handler(BaseHTTPRequestHandler):
    index: LocalIndex
    protocol_version = "HTTP/1.0"  # one request a connection: nothing lingers after a response

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: no line per request on stderr."""

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def do_GET(self) -> None:
        self._answer(body=True)

    def _answer(self, body: bool) -> None:
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        self.index._record(path)
        try:
            if path.startswith("/files/"):
                self._file(path[len("/files/") :], body)
            else:
                self._project(path, body)
        except OSError:  # the installer hung up (interrupted): nothing to answer
            pass

    def _send(self, status: int, content_type: str, length: int) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(length))
        self.end_headers()

    def _not_found(self, body: bool) -> None:
        page = b"not found\n"
        self._send(404, "text/plain", len(page))
        if body:
            self.wfile.write(page)

    def _project(self, path: str, body: bool) -> None:
        parts = [p for p in path.split("/") if p]
        projects = self.index._wheels()
        if not parts:
            links = [f'<a href="/{name}/">{name}</a>' for name in sorted(projects)]
            title = "Simple index"
        else:
            wheels = projects.get(normalise(parts[-1]))
            if not wheels:
                self._not_found(body)
                return
            links = [
                f'<a href="/files/{urllib.parse.quote(w.name)}#sha256={_sha256(w)}">{html.escape(w.name)}</a>'
                for w in wheels
            ]
            title = f"Links for {normalise(parts[-1])}"
        page = (
            f"<!DOCTYPE html>\n<html><head><title>{title}</title></head><body>\n<h1>{title}</h1>\n"
            + "<br/>\n".join(links)
            + "\n</body></html>\n"
        ).encode()
        self._send(200, "text/html; charset=utf-8", len(page))
        if body:
            self.wfile.write(page)

    def _file(self, filename: str, body: bool) -> None:
        path = self.index.wheel_dir / filename
        if "/" in filename or not filename.endswith(".whl") or not path.is_file():
            self._not_found(body)
            return
        data = path.read_bytes()
        self._send(200, "application/octet-stream", len(data))
        if not body:
            return
        gate = self.index._gate(filename)
        if gate is None:
            self.wfile.write(data)
            return
        half = len(data) // 2
        self.wfile.write(data[:half])
        self.index.held.set()
        gate.wait()
        self.wfile.write(data[half:])


def offline_env(tmp_path: Path, index_url: Optional[str] = None) -> dict[str, str]:
    """A whole environment (not additions) for pip and uv that reaches only the loopback index: no pip or
    uv configuration file (this machine's names other indexes and find-links), no cache shared with other
    runs, HOME and the XDG directories under `tmp_path`, no proxy for loopback; the default index is
    `index_url` or one that refuses (NO_INDEX), so a command must name its --index-url to install."""
    home = tmp_path / "offline-home"
    home.mkdir(parents=True, exist_ok=True)
    index = index_url or NO_INDEX
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "LANG": "C.UTF-8",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_CACHE_DIR": "1",
        "PIP_NO_INPUT": "1",
        "PIP_RETRIES": "0",
        "PIP_INDEX_URL": index,
        "UV_NO_CONFIG": "1",
        "UV_CACHE_DIR": str(tmp_path / "uv-cache"),
        "UV_INDEX_URL": index,
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_LINK_MODE": "copy",
        "UV_NO_PROGRESS": "1",
    }
