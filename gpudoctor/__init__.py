"""gpudoctor: says what is wrong with a GPU host for AI workloads, and the exact command that fixes it."""

__version__ = "0.1.0"
