// Command-line prover with rapidsnark's interface: prover <zkey> <wtns> <proof.json> <public.json>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "pool.hpp"
#include "prover.hpp"

namespace {

std::vector<uint8_t> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw np::ProverError("IO", "cannot open " + path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void writeFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw np::ProverError("IO", "cannot write " + path);
  out << content << "\n";
  if (!out) throw np::ProverError("IO", "cannot write " + path);
}

}  // namespace

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
  try {
    // One proof per process: building the shifted tables would cost more than they save.
    auto pk = np::loadZkeyFile(argv[1], threads, false);
    std::vector<uint8_t> wtns = readFile(argv[2]);
    std::vector<np::U256> witness = np::parseWitness(*pk, wtns.data(), wtns.size());
    np::ProofOutput out = np::prove(*pk, witness, threads);
    writeFile(argv[3], out.proofJson);
    writeFile(argv[4], out.publicJson);
  } catch (const np::ProverError& e) {
    std::fprintf(stderr, "Error (%s): %s\n", e.code().c_str(), e.what());
    return EXIT_FAILURE;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "Error: %s\n", e.what());
    return EXIT_FAILURE;
  }
  return EXIT_SUCCESS;
}
