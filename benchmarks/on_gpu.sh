#!/usr/bin/env bash
# The device check: gpudoctor live on a GPU machine, everything it says kept under $OUT (default ./gpu-run)
# so that it can become test fixtures. Run from the repository root:
#
#     OUT=/tmp/out bash benchmarks/on_gpu.sh [PYTHON_WITH_TORCH]
#
# It installs gpudoctor into a venv of its own, then runs check, check --deep, snapshot, bench (JSON and
# HTML) and the independent plain-torch measurement, and compares the two (issue 14: within 10%). Each
# step is time-boxed; one that fails is noted and the next one runs.
set -u
OUT="${OUT:-./gpu-run}"
mkdir -p "$OUT"
TARGET="${1:-$(command -v python3)}"
VENV="${VENV:-/tmp/gpudoctor-venv}"

step() {  # step NAME SECONDS CMD...: stdout to $OUT/NAME.out, stderr to $OUT/NAME.err, exit code noted
    local name="$1" limit="$2"
    shift 2
    timeout "$limit" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
    echo "$name: exit $?" | tee -a "$OUT/steps.txt"
}

step nvidia-smi 30 nvidia-smi -q
step install 300 bash -c "python3 -m venv '$VENV' && '$VENV/bin/pip' install -q ."
GD="$VENV/bin/gpudoctor"
step check 60 "$GD" check --python "$TARGET"
step check-json 60 "$GD" check --format json --python "$TARGET"
step check-deep 120 "$GD" check --deep --format json --python "$TARGET"
step snapshot 120 "$GD" snapshot --deep --python "$TARGET" -o "$OUT/snapshot.tar.gz"
step bench 400 "$GD" bench --python "$TARGET" --format json --html "$OUT/bench.html"
step bench-text 400 "$GD" bench --python "$TARGET" --test matmul --test d2d
step plain-torch 400 env CUDA_DEVICE_ORDER=PCI_BUS_ID "$TARGET" benchmarks/plain_torch_bench.py
step compare 30 "$TARGET" benchmarks/plain_torch_bench.py --compare "$OUT/plain-torch.out" "$OUT/bench.out"
cat "$OUT/steps.txt"
