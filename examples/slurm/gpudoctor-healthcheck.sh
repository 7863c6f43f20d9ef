#!/bin/sh
# Slurm node health check: drain this node, with gpudoctor's finding as the reason, when the GPU host
# check finds an error or cannot finish (a hung driver). Use it as either of:
#
#   slurm.conf:  HealthCheckProgram=/etc/slurm/gpudoctor-healthcheck.sh   (with HealthCheckInterval=300)
#   slurm.conf:  Prolog=/etc/slurm/gpudoctor-healthcheck.sh                (before every job on the node)
#
# Exit status: 0 healthy; 1 the node was drained (as a prolog, Slurm then requeues the job); 2 gpudoctor
# itself could not run (the node is left alone: a broken install should not drain the whole cluster).
#
# Settings, from the environment:
#   GPUDOCTOR       the gpudoctor command (default: gpudoctor)
#   GPUDOCTOR_ARGS  more options for the check, split on spaces (e.g. "--policy /etc/slurm/gpudoctor.toml")
#   SCONTROL        the scontrol command (default: scontrol)
set -u

GPUDOCTOR="${GPUDOCTOR:-gpudoctor}"
SCONTROL="${SCONTROL:-scontrol}"
node="${SLURMD_NODENAME:-$(hostname -s)}"

# shellcheck disable=SC2086 # GPUDOCTOR_ARGS is split into options on purpose
# --no-python: the node is judged, not whichever Python environment root's PATH finds (a job's own
# environment is judged by its container entrypoint or its first step, with --python).
report="$("$GPUDOCTOR" check --profile preflight --no-python ${GPUDOCTOR_ARGS:-} 2>&1)"
status=$?

first="$(printf '%s\n' "$report" | grep -m 1 '^gpudoctor: ' || true)"
case "$status:$first" in
    "0:gpudoctor: incomplete"* | "2:gpudoctor: could not check"*)
        # Nothing failed, but something did not answer in time (NVML, a driver call), or the rules that
        # decide whether the node is fit could not be evaluated: not fit for jobs.
        reason="$first"
        ;;
    0:*)
        exit 0
        ;;
    1:*)
        # "gpudoctor: ERROR GD-ECC-001: <message> · fix: <command>" -> the rule and message, not the fix.
        reason="$(printf '%s\n' "$first" | sed -e 's/ · fix: .*//')"
        ;;
    *)
        echo "gpudoctor-healthcheck: gpudoctor could not check this node (exit $status):" >&2
        printf '%s\n' "$report" >&2
        exit 2
        ;;
esac

echo "gpudoctor-healthcheck: draining $node: $reason" >&2
"$SCONTROL" update nodename="$node" state=drain reason="$reason"
exit 1
