#!/usr/bin/env bash
# Prover scaling on a host without Node (a bare multicore machine): needs bash, g++, taskset.
# The native prover is built here from the addon's own sources (native-prover/src, flags as in
# its binding.gyp); the inputs come from `npm run host-kit`, made on a machine with Node.
#   1. one proof, 1, 2, 4, … cores: the CLI pinned with taskset, PROVER_THREADS=n, key load included,
#      median of BENCH_RUNS processes after one warm-up; rapidsnark likewise when RAPIDSNARK_BIN is set
#      (its thread count follows the cores it is pinned to through a small get_nprocs shim, so neither
#      prover runs more threads than it has cores). Circuits of at least 2^15 constraints.
#   2. the pool: bench/host/throughput, the key loaded once with its tables as a warm `prover`
#      process holds it, n proofs at once on one n-thread pool, proofs per second for ~BENCH_SECONDS;
#      against the host's ceiling measured beside it: n single-threaded processes, one pinned to each
#      core (no sharing at all). Every circuit in the kit.
# Efficiency at n cores is t(1) / (n · t(n)) for one proof and rate(n) / (n · rate(1)) for the pool.
# The last line is one JSON object (figures; baseline = rapidsnark and the processes apart; targets), as
# every bench prints.
#   [RAPIDSNARK_BIN=…] bench/host/prover-host.sh <kit dir> [out dir]
set -euo pipefail

kit=$(cd "${1:?usage: prover-host.sh <kit dir> [out dir]}" && pwd)
out=${2:-$(mktemp -d)}
mkdir -p "$out/proofs"
out=$(cd "$out" && pwd)
runs=${BENCH_RUNS:-3}
seconds=${BENCH_SECONDS:-2}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../native-prover/src" && pwd)
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT

cores=$(nproc)
counts=()
for ((n = 1; n < cores; n *= 2)); do counts+=("$n"); done
counts+=("$cores")
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)

cxx=${CXX:-g++}
flags=(-std=c++17 -O3 -fexceptions -pthread)
t0=$(date +%s)
"$cxx" "${flags[@]}" -c "$src/prover.cpp" -o "$build/prover.o" &
"$cxx" "${flags[@]}" -c "$src/cli.cpp" -o "$build/cli.o" &
"$cxx" "${flags[@]}" -c "$here/throughput.cpp" -o "$build/throughput.o" &
wait
"$cxx" -pthread "$build/cli.o" "$build/prover.o" -o "$build/prover"
"$cxx" -pthread "$build/throughput.o" "$build/prover.o" -o "$build/throughput"
gcc -O2 -shared -fPIC "$here/nprocs.c" -o "$build/nprocs.so"
echo "built the native prover with $("$cxx" --version | head -n1) in $(($(date +%s) - t0)) s"

# Median of the wall time (ms) of `taskset -c 0-(n-1) <bin> <zkey> <wtns> …`, after one warm-up.
per_process_ms() {
  local n=$1 bin=$2 name=$3 tag=$4
  local args=("$kit/$name.zkey" "$kit/$name.wtns" "$out/proofs/$name.$tag$n.proof.json" "$out/proofs/$name.$tag$n.public.json")
  taskset -c "0-$((n - 1))" "$bin" "${args[@]}" >/dev/null
  local xs=() s e
  for ((i = 0; i < runs; i++)); do
    s=$(date +%s%N)
    taskset -c "0-$((n - 1))" "$bin" "${args[@]}" >/dev/null
    e=$(date +%s%N)
    xs+=($(((e - s) / 1000)))
  done
  printf '%s\n' "${xs[@]}" | sort -n | sed -n "$(((runs + 1) / 2))p" | awk '{ printf "%.1f", $1 / 1000 }'
}

json_figures=()
json_baseline=()
json_target=()
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

echo
echo "prover-host — $cores cores ($cpu), median of $runs per process, kit $(basename "$kit")"
while IFS=: read -r name constraints; do
  [[ -n $name ]] || continue
  ((constraints >= ${BENCH_SCALING_MIN:-32768})) || continue
  echo
  echo "one proof: $name ($constraints constraints), per process with the key load"
  echo "| cores | native ms | efficiency | rapidsnark ms | efficiency | native / rapidsnark |"
  echo "|---|---|---|---|---|---|"
  n1=
  r1=
  for n in "${counts[@]}"; do
    ms=$(PROVER_THREADS=$n per_process_ms "$n" "$build/prover" "$name" native)
    n1=${n1:-$ms}
    eff=$(awk -v a="$n1" -v b="$ms" -v n="$n" 'BEGIN { printf "%.0f", 100 * a / (n * b) }')
    json_figures+=("\"$name.native.ms.$n\":$ms" "\"$name.native.efficiency.$n\":$(ratio "$n1" "$(awk -v n="$n" -v b="$ms" 'BEGIN { print n * b }')")")
    if [[ -n ${RAPIDSNARK_BIN:-} ]]; then
      rms=$(LD_PRELOAD="$build/nprocs.so" per_process_ms "$n" "$RAPIDSNARK_BIN" "$name" rapidsnark)
      r1=${r1:-$rms}
      reff=$(awk -v a="$r1" -v b="$rms" -v n="$n" 'BEGIN { printf "%.0f %%", 100 * a / (n * b) }')
      rel=$(ratio "$ms" "$rms")
      json_baseline+=("\"$name.rapidsnark.ms.$n\":$rms")
      json_figures+=("\"$name.nativeOverRapidsnark.$n\":$rel")
      json_target+=("\"$name.nativeOverRapidsnark.$n\":{\"max\":1}")
    else
      rms=–
      reff=–
      rel=–
    fi
    echo "| $n | $ms | $eff % | $rms | $reff | $rel |"
  done
done <"$kit/circuits.txt"

echo
echo "the pool: n proofs at once on one n-thread pool, key loaded once with its tables, ~${seconds} s a point;"
echo "apart: n single-threaded processes, one pinned to each core, each with its own key (the host's ceiling)"
echo "warm proof: one proof at a time on the n threads, key and tables loaded (median rate over ~${seconds} s)"
echo "| circuit | constraints | cores | pool proofs/s | speedup | efficiency | apart proofs/s | pool / apart | warm proof ms |"
echo "|---|---|---|---|---|---|---|---|---|"
while IFS=: read -r name constraints; do
  [[ -n $name ]] || continue
  # One core, a few proofs: how many fit in the time a point should take.
  calib=$("$build/throughput" "$kit/$name.zkey" "$kit/$name.wtns" 1 1 3 | sed -n 's/.*"proofsPerSecond":\([0-9.]*\).*/\1/p')
  rate1=
  for n in "${counts[@]}"; do
    proofs=$(awk -v r="$calib" -v n="$n" -v s="$seconds" 'BEGIN { p = int(r * n * s); if (p < 2 * n) p = 2 * n; print p }')
    line=$(taskset -c "0-$((n - 1))" "$build/throughput" "$kit/$name.zkey" "$kit/$name.wtns" "$n" "$n" "$proofs" \
      "$out/proofs/$name.pool$n.proof.json" "$out/proofs/$name.pool$n.public.json")
    rate=$(sed -n 's/.*"proofsPerSecond":\([0-9.]*\).*/\1/p' <<<"$line")
    rate1=${rate1:-$rate}
    speedup=$(ratio "$rate" "$rate1")
    eff=$(awk -v r="$rate" -v r1="$rate1" -v n="$n" 'BEGIN { printf "%.3f", r / (n * r1) }')
    # The same work split by hand: n processes, one core and one thread each, rates summed.
    apart=0
    for ((i = 0; i < n; i++)); do
      taskset -c "$i" "$build/throughput" "$kit/$name.zkey" "$kit/$name.wtns" 1 1 "$(((proofs + n - 1) / n))" >"$build/apart.$i" &
    done
    wait
    for ((i = 0; i < n; i++)); do
      apart=$(awk -v a="$apart" -v r="$(sed -n 's/.*"proofsPerSecond":\([0-9.]*\).*/\1/p' "$build/apart.$i")" 'BEGIN { printf "%.3f", a + r }')
    done
    # Latency on a quiet pool: one proof at a time on all n threads.
    lone=$(taskset -c "0-$((n - 1))" "$build/throughput" "$kit/$name.zkey" "$kit/$name.wtns" "$n" 1 \
      "$(awk -v r="$calib" -v s="$seconds" 'BEGIN { p = int(r * s); print p < 3 ? 3 : p }')" |
      sed -n 's/.*"proofsPerSecond":\([0-9.]*\).*/\1/p')
    warm=$(awk -v r="$lone" 'BEGIN { printf "%.1f", 1000 / r }')
    echo "| $name | $constraints | $n | $rate | ${speedup}× | $(awk -v e="$eff" 'BEGIN { printf "%.0f", e * 100 }') % | $apart | $(ratio "$rate" "$apart") | $warm |"
    json_figures+=("\"$name.warmProof.ms.$n\":$warm")
    json_figures+=("\"$name.pool.proofsPerSecond.$n\":$rate" "\"$name.pool.efficiency.$n\":$eff" "\"$name.poolOverApart.$n\":$(ratio "$rate" "$apart")")
    json_baseline+=("\"$name.apart.proofsPerSecond.$n\":$apart")
  done
  json_target+=("\"$name.poolOverApart.$cores\":{\"min\":0.9}")
done <"$kit/circuits.txt"

join() {
  local IFS=,
  echo "$*"
}
echo
printf '{"bench":"prover-host","at":"%s","host":{"cores":%s,"cpu":"%s"},"settings":{"runs":%s,"seconds":%s,"rapidsnark":%s},"figures":{%s},"baseline":{%s},"target":{%s}}\n' \
  "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$cores" "$cpu" "$runs" "$seconds" "$([[ -n ${RAPIDSNARK_BIN:-} ]] && echo true || echo false)" \
  "$(join "${json_figures[@]}")" "$(join "${json_baseline[@]}")" "$(join "${json_target[@]}")"
