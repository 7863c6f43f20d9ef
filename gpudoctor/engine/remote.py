"""Remote rule packs: `--rules https://host/pack.yaml#sha256=<64 hex digits>`.

A pack is fetched over HTTP(S) and accepted only when its bytes hash to the sha256 the URL pins in its
fragment. A URL without a pin is refused before anything is fetched; a pack whose hash differs is refused
with both hashes; nothing is cached, so there is no unverified copy to fall back to. The download is
bounded: connect and read timeouts, a deadline for the whole transfer (a server dripping one byte at a time
never trips a read timeout), and the size cap of a rule file on disk (yamlsafe.MAX_BYTES), counted while
streaming. `requests` is imported only when a URL is given.
"""

from __future__ import annotations

import re
import threading
from typing import Any, Optional

from . import yamlsafe

SCHEMES = ("http", "https")
TIMEOUT = (3.0, 5.0)  # seconds: to connect, and for each read from the socket
DEADLINE = 15.0  # seconds for the whole download, DNS lookup and redirects included
MAX_REDIRECTS = 5
CHUNK = 64 * 1024
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_PIN = re.compile(r"sha256=([0-9a-fA-F]{64})")


class RemoteError(Exception):
    """A pack that could not be fetched or was not the pinned one; the message says why."""


def is_url(text: str) -> bool:
    """Whether a --rules argument names a remote pack (any `scheme://`; only http(s) will be fetched)."""
    return _URL.match(text) is not None


def display_name(url: str) -> str:
    """The URL as messages show it: without user:password, query string (signed URLs carry tokens there)
    or pin."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        netloc = parts.netloc.rsplit("@", 1)[-1]
        return urlunsplit((parts.scheme, netloc, parts.path, "..." if parts.query else "", ""))
    except ValueError:
        return url.split("#", 1)[0].split("?", 1)[0]


def split_pin(url: str) -> tuple[str, str]:
    """(the URL to fetch, without its fragment; the pinned sha256 in lower case), or RemoteError."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as e:
        raise RemoteError(f"not a valid URL ({e})") from None
    if parts.scheme.lower() not in SCHEMES:
        raise RemoteError(f"only http:// and https:// rule packs can be fetched, not {parts.scheme}://")
    if not host:
        raise RemoteError("the URL names no host")
    pin = _PIN.fullmatch(parts.fragment)
    if pin is None:
        raise RemoteError(
            "a remote rule pack must pin its content: end the URL with #sha256=<the 64 hex digits that "
            "`sha256sum pack.yaml` prints>"
        )
    return urlunsplit(parts._replace(fragment="")), pin.group(1).lower()


def fetch(
    url: str,
    timeout: Optional[tuple[float, float]] = None,
    deadline: Optional[float] = None,
    max_bytes: Optional[int] = None,
    why: str = "",
) -> tuple[str, str]:
    """(the pack's text, its display name) when the server sent exactly the pinned bytes, else RemoteError.
    `why` follows the deadline in the message when it ran out (" (the check's --timeout)")."""
    import hashlib

    import requests  # only here: a check without remote packs never pays for importing it

    name = display_name(url)
    target, expected = split_pin(url)
    timeout = TIMEOUT if timeout is None else timeout
    deadline = DEADLINE if deadline is None else deadline
    cap = yamlsafe.MAX_BYTES if max_bytes is None else max_bytes
    box: dict[str, Any] = {}
    worker = threading.Thread(
        target=_download, args=(requests, target, timeout, cap, box), name="gpudoctor-fetch", daemon=True
    )
    worker.start()
    worker.join(deadline)
    if worker.is_alive():
        _abort(box.get("response"))
        raise RemoteError(f"no complete answer within {deadline:.2g} s{why}")
    if "error" in box:
        raise box["error"]
    data: bytes = box["data"]
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise RemoteError(f"sha256 mismatch: the URL pins {expected} but the server sent {actual}; not used")
    try:
        return data.decode("utf-8"), name
    except UnicodeDecodeError as e:
        raise RemoteError(f"not UTF-8 text ({e})") from None


def _download(requests: Any, url: str, timeout: tuple[float, float], cap: int, box: dict) -> None:
    """Runs in the worker thread: box["data"] = the body, or box["error"] = a RemoteError."""
    too_large = f"larger than {cap // 1024} KiB, the limit for a rule file"
    try:
        with requests.Session() as session:
            session.max_redirects = MAX_REDIRECTS
            with session.get(url, stream=True, timeout=timeout) as response:
                box["response"] = response
                if response.status_code != 200:
                    raise RemoteError(f"HTTP {response.status_code} {response.reason or ''}".rstrip())
                declared = response.headers.get("Content-Length", "")
                if declared.isascii() and declared.isdigit() and len(declared) < 20 and int(declared) > cap:
                    raise RemoteError(too_large)
                body = bytearray()
                for chunk in response.iter_content(chunk_size=CHUNK):
                    body += chunk
                    if len(body) > cap:
                        raise RemoteError(too_large)
        box["data"] = bytes(body)
    except RemoteError as e:
        box["error"] = e
    except requests.exceptions.RequestException as e:
        box["error"] = RemoteError(_reason(e, requests, timeout))
    except (OSError, ValueError) as e:  # a socket closed under us at the deadline, a URL requests refuses
        box["error"] = RemoteError(f"cannot fetch ({type(e).__name__}: {e})"[:300])


def _abort(response: Any) -> None:
    """Wake a worker blocked reading `response` by shutting its socket down. Best effort: the worker is a
    daemon thread and is abandoned anyway. (Closing the response instead would wait for the read in
    progress: the buffered reader holds its lock while it blocks.)"""
    import socket

    raw = getattr(response, "raw", None)  # urllib3's response
    candidates = (
        getattr(getattr(raw, "_connection", None), "sock", None),  # a kept-alive connection
        # http.client hands a closing connection's socket to the response: fp (buffered) -> SocketIO -> socket
        getattr(getattr(getattr(getattr(raw, "_fp", None), "fp", None), "raw", None), "_sock", None),
    )
    for sock in candidates:
        if isinstance(sock, socket.socket):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _reason(e: Exception, requests: Any, timeout: tuple[float, float]) -> str:
    text = str(e)
    if isinstance(e, requests.exceptions.Timeout) or "timed out" in text.lower():
        return f"timed out (connect {timeout[0]:g} s, read {timeout[1]:g} s)"
    if isinstance(e, requests.exceptions.TooManyRedirects):
        return f"more than {MAX_REDIRECTS} redirects"
    if isinstance(e, requests.exceptions.SSLError):
        return f"TLS error ({text[:200]})"
    for marker, why in (
        ("Connection refused", "connection refused"),
        ("Name or service not known", "unknown host"),
        ("nodename nor servname", "unknown host"),
        ("Temporary failure in name resolution", "unknown host (name resolution failed)"),
        ("No route to host", "no route to host"),
        ("Network is unreachable", "network unreachable"),
    ):
        if marker in text:
            return why
    return f"cannot fetch ({type(e).__name__}: {text})"[:300]
