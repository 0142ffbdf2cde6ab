#!/usr/bin/env bash
# Data parallelism across nodes, simulated: the table of docs/PERFORMANCE.md ("Data
# parallelism across nodes (simulated)"). For the published profiles (the RoundPipe artifact's
# measured RTX 4090 times, examples/profiles) with the models' parameter bytes added
# (bench/make_node_profiles.py, committed as bench/profiles/*-params.json), 8 GPUs per node and
# 16 micro-batches per step (the replay of docs/SIMULATOR.md), RoundPipe's step time and
# scaling efficiency on 1, 2, 4, 8 and 16 nodes over 25 and 100 Gb/s node links: the chain
# reduction on a thread of its own (what rp-run does under mpirun: its communication thread),
# the same on the optimizer thread (--node-reduce-on-optimizer), an allgather and a ring
# all-reduce (docs/SIMULATOR.md).
#
#   bench/sim_nodes.sh [RP_RUN]
#
#   RP_RUN  the rp-run binary (default: build/bin/rp-run); no GPU is used.
#
# Environment (defaults): UPDATE (sync | async, default sync), LATENCY_US (10: per message),
# NODES ("1 2 4 8 16"), LINKS ("25 100": NIC ratings in Gb/s, passed to rp-run simulate as
# GB/s, G / 8), MICRO_BATCHES (16), GPUS (8). Prints a
# Markdown table per model on stdout. Every number comes from one rp-run invocation of the
# form shown above each table; a failing run stops the script (exit 1).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rp_run="${1:-$root/build/bin/rp-run}"
update="${UPDATE:-sync}"
latency="${LATENCY_US:-10}"
nodes_list="${NODES:-1 2 4 8 16}"
links="${LINKS:-25 100}"
mb="${MICRO_BATCHES:-16}"
gpus="${GPUS:-8}"

# Prints "step_ms efficiency_%" of one simulation (rp-run's "step time" and "scaling
# efficiency" lines; async: the steady-state step). LINK is in Gb/s.
measure() {
  local profile="$1" nodes="$2" link="$3" out step eff
  shift 3
  out="$("$rp_run" simulate --profile "$profile" --gpus "$gpus" --micro-batches "$mb" \
    --update "$update" --nodes "$nodes" --node-link-gbps "$(awk -v g="$link" 'BEGIN {printf "%.17g", g / 8}')" \
    --node-link-latency-us "$latency" "$@")"
  step="$(sed -n 's/^rp-run: step time \([0-9.]*\) ms.*/\1/p' <<<"$out")"
  eff="$(sed -n 's/^rp-run: scaling efficiency \([0-9.]*\)%.*/\1/p' <<<"$out")"
  [ -n "$step" ] && [ -n "$eff" ] || { echo "sim_nodes.sh: no step time in: $out" >&2; exit 1; }
  printf '%.1f %s\n' "$step" "$eff"
}

for model in qwen3-1.7b-4090 llama3.1-8b-4090; do
  profile="$root/bench/profiles/$model-params.json"
  echo
  echo "**$model** ($update updates): \`rp-run simulate --profile bench/profiles/$model-params.json --gpus $gpus --micro-batches $mb --update $update --nodes R --node-link-gbps B --node-link-latency-us $latency\` [\`--node-reduce-on-optimizer\` | \`--node-reduction allgather\` | \`--node-reduction ring\`], B = G / 8 GB/s for a link of G Gb/s"
  echo
  echo "| link | nodes | step, chain (ms) | efficiency, chain | chain, on the optimizer thread | allgather | ring |"
  echo "|---|---|---|---|---|---|---|"
  for link in $links; do
    for n in $nodes_list; do
      read -r s1 e1 <<<"$(measure "$profile" "$n" "$link")"
      read -r _ e2 <<<"$(measure "$profile" "$n" "$link" --node-reduce-on-optimizer)"
      read -r _ e3 <<<"$(measure "$profile" "$n" "$link" --node-reduction allgather)"
      read -r _ e4 <<<"$(measure "$profile" "$n" "$link" --node-reduction ring)"
      echo "| $link Gb/s | $n | $s1 | $e1 % | $e2 % | $e3 % | $e4 % |"
    done
  done
done
