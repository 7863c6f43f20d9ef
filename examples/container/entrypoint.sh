#!/bin/sh
# Container entrypoint: check the GPU host within a hard deadline (5 s), then become the job.
#
#   healthy:  one line on stderr ("gpudoctor: ok · 1 × NVIDIA H200 · driver ... · CUDA 13.0"), then the job
#             runs as PID 1's replacement (exec), with its own stdout, signals and exit status
#   errors:   one line per error on stderr (rule id, message, first fix); the job never starts; exit 1
#
# GPUDOCTOR_ARGS adds options to the check, split on spaces, e.g. GPUDOCTOR_ARGS="--policy /etc/gpudoctor.toml
# --timeout 3". Without --policy, a gpudoctor.toml in the working directory is the policy when there is one.
set -eu
# shellcheck disable=SC2086 # GPUDOCTOR_ARGS is split into options on purpose
gpudoctor check --profile preflight ${GPUDOCTOR_ARGS:-} && exec "$@"
