// Command-line prover with rapidsnark's interface: prover <zkey> <wtns> <proof.json> <public.json>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fileio.hpp"
#include "pool.hpp"
#include "prover.hpp"

using np::readFile;
using np::writeFile;

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "Usage: prover <circuit.zkey> <witness.wtns> <proof.json> <public.json>\n");
    return EXIT_FAILURE;
  }
  unsigned threads = np::ThreadPool::defaultThreads();
  if (const char* t = std::getenv("PROVER_THREADS")) {
    long v = std::strtol(t, nullptr, 10);
    if (v > 0 && v <= 1024) threads = (unsigned)v;
  }
  return np::runCommand([&] {
    // One proof per process: building the shifted tables would cost more than they save.
    auto pk = np::loadZkeyFile(argv[1], threads, false);
    std::vector<uint8_t> wtns = readFile(argv[2]);
    std::vector<np::U256> witness = np::parseWitness(*pk, wtns.data(), wtns.size());
    np::ProofOutput out = np::prove(*pk, witness, threads);
    writeFile(argv[3], out.proofJson);
    writeFile(argv[4], out.publicJson);
  });
}
