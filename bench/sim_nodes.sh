#!/usr/bin/env bash
# Data parallelism across nodes, simulated: the table of docs/PERFORMANCE.md ("Data
# parallelism across nodes (simulated)"). For the published profiles (the RoundPipe artifact's
# measured RTX 4090 times, examples/profiles) with the models' parameter bytes added
# (bench/make_node_profiles.py, committed as bench/profiles/*-params.json), 8 GPUs per node and
# 16 micro-batches per step (the replay of docs/SIMULATOR.md), RoundPipe's step time and
# scaling efficiency on 1, 2, 4, 8 and 16 nodes over node links of 3.125 and 12.5 GB/s
# (gigabytes per second: the 25 and 100 Gb/s of network cards' ratings): the chain
# reduction on a thread of its own (what rp-run does under mpirun: its communication thread),
# the same on the optimizer thread (--node-reduce-on-optimizer), an allgather and a ring
# all-reduce (docs/SIMULATOR.md).
#
#   bench/sim_nodes.sh [RP_RUN]
#
#   RP_RUN  the rp-run binary (default: build/bin/rp-run); no GPU is used.
#
# Environment (defaults): RP_UPDATE (sync | async, default sync), RP_LATENCY_US (10: per
# message, microseconds), RP_NODES ("1 2 4 8 16"), RP_NODE_LINKS ("3.125 12.5": GB/s per node
# per direction), RP_MICRO_BATCHES (16), RP_GPUS (8: per node). The names before the RP_ prefix
# (UPDATE, LATENCY_US, NODES, MICRO_BATCHES, GPUS, and LINKS, which was in Gb/s) are still read
# for one release, with a warning. Prints a Markdown table per model on stdout. Every number
# comes from one rp-run invocation of the form shown above each table; a failing run stops the
# script (exit 1).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rp_run="${1:-$root/build/bin/rp-run}"
# shellcheck source=bench/env.sh
source "$root/bench/env.sh"
update="$(rp_env RP_UPDATE UPDATE sync)"
latency="$(rp_env RP_LATENCY_US LATENCY_US 10)"
nodes_list="$(rp_env RP_NODES NODES "1 2 4 8 16")"
mb="$(rp_env RP_MICRO_BATCHES MICRO_BATCHES 16)"
gpus="$(rp_env RP_GPUS GPUS 8)"
if [[ -z "${RP_NODE_LINKS:-}" && -n "${LINKS:-}" ]]; then
  echo "sim_nodes.sh: warning: LINKS (Gb/s) is deprecated and read for this release only; set RP_NODE_LINKS (GB/s)" >&2
  links="$(awk -v l="$LINKS" 'BEGIN { n = split(l, v, " "); for (i = 1; i <= n; i++) printf "%s%g", (i > 1 ? " " : ""), v[i] / 8 }')"
else
  links="$(rp_env RP_NODE_LINKS "" "3.125 12.5")"
fi

# Prints "step_ms efficiency_%" of one simulation (rp-run's "step time" and "scaling
# efficiency" lines; async: the steady-state step). LINK is in GB/s.
measure() {
  local profile="$1" nodes="$2" link="$3" out step eff
  shift 3
  out="$("$rp_run" simulate --profile "$profile" --gpus "$gpus" --micro-batches "$mb" \
    --update "$update" --nodes "$nodes" --node-link-gbps "$link" \
    --node-link-latency-us "$latency" "$@")"
  step="$(sed -n 's/^rp-run: step time \([0-9.]*\) ms.*/\1/p' <<<"$out")"
  eff="$(sed -n 's/^rp-run: scaling efficiency \([0-9.]*\)%.*/\1/p' <<<"$out")"
  [ -n "$step" ] && [ -n "$eff" ] || { echo "sim_nodes.sh: no step time in: $out" >&2; exit 1; }
  printf '%.1f %s\n' "$step" "$eff"
}

for model in qwen3-1.7b-4090 llama3.1-8b-4090; do
  profile="$root/bench/profiles/$model-params.json"
  echo
  echo "**$model** ($update updates): \`rp-run simulate --profile bench/profiles/$model-params.json --gpus $gpus --micro-batches $mb --update $update --nodes R --node-link-gbps L --node-link-latency-us $latency\` (L: the link in GB/s) [\`--node-reduce-on-optimizer\` | \`--node-reduction allgather\` | \`--node-reduction ring\`]"
  echo
  echo "| link | nodes | step, chain (ms) | efficiency, chain | chain, on the optimizer thread | allgather | ring |"
  echo "|---|---|---|---|---|---|---|"
  for link in $links; do
    for n in $nodes_list; do
      read -r s1 e1 <<<"$(measure "$profile" "$n" "$link")"
      read -r _ e2 <<<"$(measure "$profile" "$n" "$link" --node-reduce-on-optimizer)"
      read -r _ e3 <<<"$(measure "$profile" "$n" "$link" --node-reduction allgather)"
      read -r _ e4 <<<"$(measure "$profile" "$n" "$link" --node-reduction ring)"
      echo "| $link GB/s | $n | $s1 | $e1 % | $e2 % | $e3 % | $e4 % |"
    done
  done
done
