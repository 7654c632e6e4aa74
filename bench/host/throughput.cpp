// Pool throughput of the native prover, without Node: the key is loaded once with its precomputed
// tables (as a warm `prover` process holds it), then `concurrency` callers prove at once on the one
// shared thread pool of `threads` threads (the prover process runs PROVER_CONCURRENCY jobs, default
// the core count, on a pool of the same size) until `proofs` proofs are made.
//   throughput <circuit.zkey> <witness.wtns> <threads> <concurrency> <proofs> [proof.json public.json]
// Prints one JSON line: {"threads":…,"concurrency":…,"proofs":…,"loadMs":…,"seconds":…,"proofsPerSecond":…}
// Built by bench/host/prover-host.sh from the addon's own sources.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../../native-prover/src/fileio.hpp"
#include "../../native-prover/src/pool.hpp"
#include "../../native-prover/src/prover.hpp"

namespace {

using np::readFile;
using np::writeFile;

unsigned positive(const char* arg, const char* name) {
  long v = std::strtol(arg, nullptr, 10);
  if (v < 1 || v > 4096) {
    std::fprintf(stderr, "%s must be between 1 and 4096\n", name);
    std::exit(EXIT_FAILURE);
  }
  return (unsigned)v;
}

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6 && argc != 8) {
    std::fprintf(stderr,
                 "Usage: throughput <circuit.zkey> <witness.wtns> <threads> <concurrency> <proofs> "
                 "[proof.json public.json]\n");
    return EXIT_FAILURE;
  }
  const unsigned threads = positive(argv[3], "threads");
  const unsigned concurrency = positive(argv[4], "concurrency");
  const unsigned proofs = positive(argv[5], "proofs");
  return np::runCommand([&] {
    auto t0 = std::chrono::steady_clock::now();
    auto pk = np::loadZkeyFile(argv[1], threads, true);
    const double loadMs = since(t0) * 1000;
    std::vector<uint8_t> wtns = readFile(argv[2]);
    const std::vector<np::U256> witness = np::parseWitness(*pk, wtns.data(), wtns.size());
    np::ProofOutput last = np::prove(*pk, witness, threads);  // warm-up: page in the tables
    std::atomic<unsigned> next{0};
    std::atomic<bool> failed{false};
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> callers;
    for (unsigned c = 0; c < concurrency; ++c) {
      callers.emplace_back([&] {
        try {
          while (next.fetch_add(1) < proofs) np::prove(*pk, witness, threads);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "Error: %s\n", e.what());
          failed = true;
        }
      });
    }
    for (auto& t : callers) t.join();
    const double seconds = since(start);
    if (failed) throw std::runtime_error("a proof failed");
    if (argc == 8) {
      writeFile(argv[6], last.proofJson);
      writeFile(argv[7], last.publicJson);
    }
    std::printf(
        "{\"threads\":%u,\"concurrency\":%u,\"proofs\":%u,\"loadMs\":%.1f,\"seconds\":%.4f,"
        "\"proofsPerSecond\":%.3f}\n",
        threads, concurrency, proofs, loadMs, seconds, proofs / seconds);
  });
}
