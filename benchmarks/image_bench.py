"""Times read_image over a large generated image against `gzip -dc` of the same layers to /dev/null.

    python benchmarks/image_bench.py [--size-gb 3] [--layers 6] [--runs 2] [--plain] [--dir DIR] [--keep]

The image is built here, once: an OCI layout whose gzip layers hold many files of mixed sizes (small
compressible text, binaries that do not compress, a few large compressible files, and the dist-info, CUDA
and Python files an image check reads), `--size-gb` of compressed layers in all. `--plain` adds the same
layers uncompressed, where the reader walks tar headers and seeks past the members.

Issue 25's budget: each layer streamed once, nothing written to disk, peak memory under 100 MB, time at
most 1.2x `gzip -dc`. read_image runs in a child process, which reports its own peak (VmHWM) and the bytes
it wrote (/proc/self/io write_bytes, wchar). Runs are interleaved (gzip -dc, read_image, ...), after one
warm-up read of every blob; medians printed. A benchmark, not a test: it prints, never fails.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SITE = "usr/local/lib/python3.11/site-packages"
# (share of small text files, that plus the share of binaries, the largest binary); the rest are large
# compressible data files. "typical": about 4,500 files per compressed GB; "small": about 40,000.
MIXES = {"typical": (0.85, 0.99, 2 << 20), "small": (0.97, 0.999, 128 * 1024)}
CHILD = r"""
import json, sys, time
from gpudoctor.image import read_image
t = time.perf_counter()
view = read_image(sys.argv[1], timeout=3600)
took = time.perf_counter() - t
status = dict(l.split(":", 1) for l in open("/proc/self/status") if ":" in l)
io = dict(l.split(": ", 1) for l in open("/proc/self/io"))
print(json.dumps({"seconds": took, "vmhwm_kb": int(status["VmHWM"].split()[0]),
                  "write_bytes": int(io["write_bytes"]), "wchar": int(io["wchar"]),
                  "layers": view.layers, "libraries": len(view.libraries),
                  "distributions": sum(len(p["distributions"]) for p in view.pythons)}))
"""


class BlobWriter:
    """A file in blobs/sha256 written through zlib (gzip) or as it is, hashed as it goes."""

    def __init__(self, root: Path, compress: bool) -> None:
        self.root, self.tmp = root, root / "blobs" / "sha256" / f".tmp-{os.getpid()}-{random.random()}"
        self.f = open(self.tmp, "wb")  # noqa: SIM115
        self.hash = hashlib.sha256()
        self.z = zlib.compressobj(1, zlib.DEFLATED, 31) if compress else None
        self.size = 0

    def write(self, data: bytes) -> int:
        out = self.z.compress(data) if self.z else data
        self._out(out)
        return len(data)

    def _out(self, data: bytes) -> None:
        if data:
            self.hash.update(data)
            self.f.write(data)
            self.size += len(data)

    def close(self) -> tuple[str, int]:
        if self.z:
            self._out(self.z.flush())
        self.f.close()
        digest = self.hash.hexdigest()
        os.replace(self.tmp, self.root / "blobs" / "sha256" / digest)
        return "sha256:" + digest, self.size


def text_pool(rng: random.Random) -> bytes:
    words = [b"import", b"torch", b"def", b"return", b"self", b"cuda", b"tensor", b"class", b"for", b"in"]
    words += [
        bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz_") for _ in range(rng.randint(3, 12)))
        for _ in range(400)
    ]
    lines = []
    for _ in range(40000):
        lines.append(b" ".join(rng.choice(words) for _ in range(rng.randint(2, 12))))
    return b"\n".join(lines)


def write_layer(
    root: Path, index: int, target: int, compress: bool, rng: random.Random, pool: bytes, mix: str
):
    """One layer of about `target` compressed bytes; returns (digest, size, diff_id, members)."""
    blob = BlobWriter(root, compress)
    diff = hashlib.sha256()

    class Tee:
        def write(self, data: bytes) -> int:
            diff.update(data)
            return blob.write(data)

    members = 0
    with tarfile.open(fileobj=Tee(), mode="w|", format=tarfile.PAX_FORMAT) as tar:

        def add(name: str, data: bytes) -> None:
            nonlocal members
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 1700000000
            tar.addfile(info, io.BytesIO(data))
            members += 1

        for name, data in interesting(index):
            add(name, data)
        n = 0
        while blob.size < target:
            n += 1
            kind = rng.random()
            if kind < MIXES[mix][0]:  # small source-like text, compressible
                size = rng.randint(200, 32 * 1024)
                start = rng.randrange(0, len(pool) - size)
                add(f"usr/lib/layer{index}/pkg{n % 97}/mod{n}.py", pool[start : start + size])
            elif kind < MIXES[mix][1]:  # a binary that does not compress
                add(
                    f"usr/lib/layer{index}/bin{n % 13}/lib{n}.so.1",
                    os.urandom(rng.randint(16 * 1024, MIXES[mix][2])),
                )
            else:  # a large compressible data file
                size = rng.randint(4 << 20, 32 << 20)
                start = rng.randrange(0, len(pool) - 1024)
                add(
                    f"usr/share/layer{index}/data{n}.txt",
                    (pool[start:] + pool[:start])[: 1 << 20] * (size >> 20),
                )
    digest, size = blob.close()
    return digest, size, "sha256:" + diff.hexdigest(), members


def interesting(index: int) -> list:
    """The files an image check reads, spread over the layers."""
    if index == 0:
        return [
            ("etc/os-release", b'ID=ubuntu\nVERSION_ID="22.04"\n'),
            ("usr/local/cuda-12.4/version.json", b'{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}}\n'),
            ("usr/local/cuda-12.4/lib64/libcudart.so.12", b"\x7fELF"),
        ]
    if index == 1:
        meta = b"Name: torch\nVersion: 2.5.1+cu124\nRequires-Dist: nvidia-cudnn-cu12==9.1.0.70\n"
        return [
            ("usr/local/bin/python3.11", b"\x7fELF"),
            (f"{SITE}/torch-2.5.1+cu124.dist-info/METADATA", meta),
            (f"{SITE}/torch/version.py", b"__version__ = '2.5.1+cu124'\ncuda = '12.4'\n"),
            (
                f"{SITE}/nvidia_cudnn_cu12-9.1.0.70.dist-info/METADATA",
                b"Name: nvidia-cudnn-cu12\nVersion: 9.1.0.70\n",
            ),
            (
                f"{SITE}/nvidia_cudnn_cu12-9.1.0.70.dist-info/RECORD",
                b"nvidia/cudnn/lib/libcudnn.so.9,sha256=x,1\n",
            ),
        ]
    return []


def build(root: Path, size: int, layers: int, compress: bool, seed: int, mix: str) -> list:
    rng = random.Random(seed)
    pool = text_pool(rng)
    (root / "blobs" / "sha256").mkdir(parents=True, exist_ok=True)
    per = size // layers
    out = []
    for i in range(layers):
        t = time.perf_counter()
        out.append(write_layer(root, i, per if compress else per * 2, compress, rng, pool, mix))
        print(f"  layer {i + 1}/{layers}: {out[-1][1] / 1e6:.0f} MB, {out[-1][3]} members "
              f"({time.perf_counter() - t:.0f} s)", flush=True)  # fmt: skip
    media = "application/vnd.oci.image.layer.v1.tar" + ("+gzip" if compress else "")
    config = json.dumps(
        {"architecture": "amd64", "os": "linux", "config": {"Env": ["PATH=/usr/local/bin:/usr/bin:/bin"]},
         "rootfs": {"type": "layers", "diff_ids": [x[2] for x in out]}}
    ).encode()  # fmt: skip
    manifest = json.dumps(
        {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
         "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": put(root, config),
                    "size": len(config)},
         "layers": [{"mediaType": media, "digest": d, "size": s} for d, s, _, _ in out]}
    ).encode()  # fmt: skip
    index = {"schemaVersion": 2, "manifests": [
        {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": put(root, manifest),
         "size": len(manifest)}]}  # fmt: skip
    (root / "index.json").write_text(json.dumps(index))
    (root / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    return out


def put(root: Path, data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    (root / "blobs" / "sha256" / digest).write_bytes(data)
    return "sha256:" + digest


def gzip_dc(root: Path, layers: list) -> float:
    t = time.perf_counter()
    for digest, _, _, _ in layers:
        path = root / "blobs" / "sha256" / digest.split(":")[1]
        with open(os.devnull, "wb") as null:
            subprocess.run(["gzip", "-dc", str(path)], stdout=null, check=True, timeout=3600)
    return time.perf_counter() - t


def reader(root: Path) -> dict:
    t = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(root)], capture_output=True, text=True, timeout=3600
    )
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    out = json.loads(proc.stdout)
    out["wall"] = wall
    return out


def warm(root: Path) -> None:
    for path in sorted((root / "blobs" / "sha256").iterdir()):
        with open(path, "rb") as f:
            while f.read(8 << 20):
                pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-gb", type=float, default=3.0, help="compressed layers in all (default 3)")
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--plain", action="store_true", help="also time the same content in uncompressed layers")
    ap.add_argument("--dir", help="where to build (default: a temporary directory, removed afterwards)")
    ap.add_argument("--keep", action="store_true", help="keep what was built (with --dir: reuse it)")
    ap.add_argument("--seed", type=int, default=25)
    ap.add_argument("--mix", choices=sorted(MIXES), default="typical", help="the files' sizes (see MIXES)")
    args = ap.parse_args()
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="gpudoctor-image-bench-"))
    try:
        results = {}
        for kind, compress in [("gzip", True)] + ([("plain", False)] if args.plain else []):
            root = base / kind
            size = int(args.size_gb * 1e9) if compress else int(args.size_gb * 1e9) // 4
            if args.keep and (root / "index.json").exists():
                layers = [(x["digest"], x["size"], "", 0) for x in _manifest(root)["layers"]]
                print(f"{kind}: reusing {root}")
            else:
                print(
                    f"{kind}: building {size / 1e9:.1f} GB in {args.layers} layers under {root}", flush=True
                )
                layers = build(root, size, args.layers, compress, args.seed, args.mix)
            warm(root)
            gz, rd = [], []
            for _ in range(args.runs):
                if compress:
                    gz.append(gzip_dc(root, layers))
                rd.append(reader(root))
            results[kind] = (layers, gz, rd)
        for kind, (layers, gz, rd) in results.items():
            total = sum(x[1] for x in layers)
            wall = statistics.median(r["wall"] for r in rd)
            inner = statistics.median(r["seconds"] for r in rd)
            print(f"\n{kind}: {len(layers)} layers, {total / 1e9:.2f} GB on disk, {args.runs} runs (medians)")
            if gz:
                g = statistics.median(gz)
                print(f"  gzip -dc > /dev/null     {g:8.2f} s")
                print(f"  read_image (child wall)  {wall:8.2f} s   = {wall / g:.2f}x gzip -dc")
            else:
                print(f"  read_image (child wall)  {wall:8.2f} s   ({total / wall / 1e9:.1f} GB/s)")
            print(f"  read_image (in-process)  {inner:8.2f} s")
            print(f"  peak memory (VmHWM)      {max(r['vmhwm_kb'] for r in rd) / 1024:8.1f} MB")
            print(f"  written to disk          {max(r['write_bytes'] for r in rd)} bytes (write_bytes); "
                  f"wchar {max(r['wchar'] for r in rd)} bytes (its stdout)")  # fmt: skip
            print(f"  found: {rd[0]['libraries']} libraries, {rd[0]['distributions']} distributions")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


def _manifest(root: Path) -> dict:
    index = json.loads((root / "index.json").read_text())
    digest = index["manifests"][0]["digest"].split(":")[1]
    return json.loads((root / "blobs" / "sha256" / digest).read_bytes())


if __name__ == "__main__":
    main()
