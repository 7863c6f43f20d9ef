"""The matcher (explain/match.py): the specific ranked over the generic, numbers read and masked, short or
generic input matching nothing. A bare number is an error code only where the text says so: "step 802" and
"802 MiB" are not CUDA error 802 (issue 24), "Error 802:", "code=802(", "error (802)" are."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpudoctor.explain.index import build
from gpudoctor.explain.match import Known, Matcher, read_numbers, tokens

# tests/explain/corpus/first_set.yaml, each with its source there
DEVICE_COUNT_802 = (
    "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before "
    "calling NumCudaDevices() that might have already set an error? Error 802: system not yet initialized"
)
BANDWIDTH_802 = (
    'CUDA error at bandwidthTest.cu:256 code=802(cudaErrorSystemNotReady) "cudaSetDevice(currentDevice)"'
)
NOT_READY = {"GD-RUNTIME-001", "GD-FABRIC-001", "GD-FABRIC-002", "GD-FABRIC-003", "GD-FABRIC-004"}


@pytest.fixture(scope="module")
def matcher():
    return build()[0]


@pytest.mark.parametrize(
    "line",
    [
        # The two readings issue 24 reports ("step 802", "Allocated 802 MiB").
        "step 802",
        "Allocated 802 MiB",
        # PyTorch's OOM message, seen in xingchenshanyao/VoxelNeXt@23fbd9f949b44a8fcaa69097b5586c0ee56894b8:
        # 07_RegionCLIP.md (BUG5).
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 802.00 MiB. GPU 0 has a total "
        "capacty of 7.77 GiB of which 484.94 MiB is free.",
    ],
)
def test_a_number_outside_an_error_code_is_no_token(line):
    assert not {t for t in tokens(line) if t.isdigit()}


def test_an_oom_of_802_mib_is_not_error_802(matcher):
    line = (  # xingchenshanyao/VoxelNeXt@23fbd9f949b44a8fcaa69097b5586c0ee56894b8:07_RegionCLIP.md (BUG5)
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 802.00 MiB. GPU 0 has a total "
        "capacty of 7.77 GiB of which 484.94 MiB is free. Including non-PyTorch memory, this process has "
        "6.52 GiB memory in use. Of the allocated memory 4.37 GiB is allocated by PyTorch, and 850.97 MiB "
        "is reserved by PyTorch but unallocated."
    )
    ranked = matcher.rank(line, limit=8)
    assert ranked[0].known.id in ("GD-EXPLAIN-003", "GD-GPU-001")
    assert not NOT_READY & {c.known.id for c in ranked}


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (DEVICE_COUNT_802, "802"),
        (BANDWIDTH_802, "802"),
        # rules/runtime.yaml's and rules/gpu.yaml's error texts, each with its source there
        ("cuda runtime error (802) : system not yet initialized", "802"),
        ("CUDA error(999), unknown error", "999"),
        ("Call to cuInit results in CUDA_ERROR_UNKNOWN (999)", "999"),
        ("(803 vs. 0) : system has unsupported display driver / cuda driver combination", "803"),
        ("cudaGetDeviceCount returned 35", "35"),
        ("OSError: [Errno 38] Function not implemented", "38"),
    ],
)
def test_an_error_code_is_a_token(line, code):
    assert code in tokens(line)


@pytest.mark.parametrize(
    "line",
    [DEVICE_COUNT_802, BANDWIDTH_802],
)
def test_cuda_error_802_is_still_read(matcher, line):
    assert matcher.rank(line, limit=8)[0].known.id in NOT_READY


def test_the_log_prefilter_never_drops_a_line_rank_would_match(matcher):
    # Every real message of the corpus (each cites its thread), whole and line by line, and every known
    # text: a line may_be_confident turns away has no confident candidate.
    corpus = Path(__file__).parent / "corpus"
    messages = [
        c["message"] for f in sorted(corpus.glob("*.yaml")) for c in yaml.safe_load(f.read_text())["cases"]
    ]
    lines = messages + [line for m in messages for line in m.splitlines()]
    lines += [t for k in matcher.knowns for t in k.errors]
    turned_away = [line for line in lines if not matcher.may_be_confident(line)]
    assert turned_away  # the prefilter does turn lines away
    assert [line for line in turned_away if any(c.confident for c in matcher.rank(line, limit=8))] == []


def test_a_whole_known_text_beats_shared_words():
    m = Matcher(
        [
            Known("GD-A", "generic", ("CUDA error",)),
            Known(
                "GD-B", "specific", ("CUDA error: no kernel image is available for execution on the device",)
            ),
            Known("GD-C", "other", ("cudnn version mismatch",)),
        ]
    )
    ranked = m.rank("RuntimeError: CUDA error: no kernel image is available for execution on the device")
    assert [c.known.id for c in ranked][:2] == ["GD-B", "GD-A"]
    assert ranked[0].how == "text" and ranked[0].distinct > ranked[1].distinct


def test_numbers_are_masked_for_a_near_exact_match():
    m = Matcher([Known("GD-A", "t", ("libcudnn.so.8: cannot open shared object file",))])
    (c,) = m.rank("ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory")
    assert (c.known.id, c.how) == ("GD-A", "masked")


def test_rare_tokens_weigh_more_than_common_ones():
    m = Matcher(
        [
            Known("GD-A", "a", ("cuda driver failed",)),
            Known("GD-B", "b", ("cuda runtime failed",)),
            Known("GD-C", "c", ("cudaErrorNoKernelImageForDevice cuda",)),
            # Rarity is relative: a set of rules as large as the shipped one.
            *(Known(f"GD-F{n}", "f", (f"filler{n} cuda",)) for n in range(60)),
        ]
    )
    top = m.top("got cudaErrorNoKernelImageForDevice while launching")
    assert top is not None and top.known.id == "GD-C" and top.how == "tokens"


@pytest.mark.parametrize(
    "message",
    [
        "",
        "a",
        "-",
        "cuda",
        "CUDA error",
        "error",
        "   ",
        # Generic failures that are no GPU host's: they must not match a rule that shares a word with them
        # ("core dumped", "No space left on device" without /dev/shm).
        "Segmentation fault (core dumped)",
        "ModuleNotFoundError: No module named 'foo'",
        "TypeError: unsupported operand type(s) for +: 'int' and 'str'",
        "KeyError: 'input_ids'",
        "OSError: [Errno 28] No space left on device",
    ],
)
def test_short_or_generic_input_matches_nothing(matcher, message):
    assert matcher.top(message) is None


def test_numbers_in_the_message_are_read():
    n = read_numbers("The NVIDIA driver on your system is too old (found version 11040).")
    assert n.cuda_found == "11.4"
    assert (
        read_numbers("sm_120 is not compatible with the current PyTorch installation").compute_capability
        == "12.0"
    )
    assert read_numbers("NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.").xid == 79
    assert read_numbers("NVRM: Xid 48 on GPU").xid == 48
    assert read_numbers("nothing here") == read_numbers("")
