"""What the NVIDIA container runtime decides about an image's requirements on this host: the NVIDIA_REQUIRE_*
evaluator (require), what the toolkit passes it (toolkit), the derived container.require_* facts
(require_verdict), and the rule language's `nvidia_require` operator (operator)."""
