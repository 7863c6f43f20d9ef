"""The runtime probe (check --deep) fed hostile child output: the answers of the smoke test and the framework
children are data (a snapshot's runtime.json may hold anything), so every shape gives facts, never a crash."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from gpudoctor.facts import Fact
from gpudoctor.host.snapshot import Recording, SnapshotHost
from gpudoctor.probes import runtime

from .strategies import json_scalars, json_values, text

SMOKE_KEYS = ("library", "load_error", "driver_version", "init", "device_count", "devices", "error")
RESULT_KEYS = (
    "version", "cuda", "hip", "cuda_available", "device_count", "init_error", "arch_list", "capabilities",
    "device_errors", "cudnn", "cudnn_error", "cudnn_files", "nccl", "build_info", "gpus", "gpus_error",
    "platform", "devices", "cuda_plugins", "gpu_error", "runtime_version", "driver_version", "providers",
    "device",
)  # fmt: skip
DEVICE_KEYS = ("index", "ok", "call", "code", "name", "message")
FIELD = st.one_of(
    json_scalars,
    st.lists(json_scalars, max_size=3),
    st.lists(st.dictionaries(st.sampled_from(DEVICE_KEYS), json_scalars, max_size=4), max_size=2),
)


def answers(keys: tuple[str, ...], wrap: bool) -> st.SearchStrategy[dict]:
    """A child's {"rc", "stdout", "stderr"}, its stdout a JSON object of the expected keys, hostile values."""
    data = st.dictionaries(st.sampled_from(keys), FIELD, max_size=8)
    if wrap:  # a framework child's answer: its result inside, beside warnings and import errors
        data = st.fixed_dictionaries(
            {"result": data},
            optional={"import_error": FIELD, "warnings": FIELD, "log": FIELD},
        )
    stdout = st.one_of(data.map(json.dumps), text)  # an answer, or whatever a broken child printed
    return st.fixed_dictionaries(
        {"rc": st.one_of(st.none(), st.integers(-64, 255)), "stdout": stdout, "stderr": text}
    )


DUMP = {
    "executable": "/v/bin/python",
    "distributions": [{"name": n, "version": "1.0"} for n in ("torch", "tensorflow", "jax", "onnxruntime")]
    + [{"name": "cupy-cuda12x", "version": "13.6.0"}],
}


@given(answers(SMOKE_KEYS, wrap=False), st.sampled_from(runtime.FRAMEWORKS), answers(RESULT_KEYS, wrap=True))
def test_any_child_output_gives_facts(smoke, framework, answer):
    rec = Recording(
        python={"default": "/v/bin/python", "/v/bin/python": DUMP},
        runtime={"cuda_smoke": smoke, "frameworks": {"/v/bin/python": {framework: answer}}},
    )
    facts = runtime.probe(SnapshotHost(rec))
    assert all(
        isinstance(f, Fact) and name.startswith(("runtime.", "extensions")) for name, f in facts.items()
    )
    assert facts["runtime.cuda.status"].value in ("ok", "failed", "no library", "crashed")
    assert facts[f"runtime.{framework}.status"].value in ("ok", "import failed", "crashed", None)


@given(json_values)
def test_any_runtime_json_replays(value):
    rec = Recording(python={"default": "/v/bin/python", "/v/bin/python": DUMP}, runtime={"cuda_smoke": value})
    rec.runtime["frameworks"] = value
    facts = runtime.probe(SnapshotHost(rec))
    assert all(isinstance(f, Fact) for f in facts.values())
