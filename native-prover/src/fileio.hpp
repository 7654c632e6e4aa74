// For the command-line programs built on the prover (cli.cpp and bench/host/throughput.cpp): whole-file
// reads and writes (failures are ProverErrors with code IO) and the exit status of a run.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "prover.hpp"

namespace np {

inline std::vector<uint8_t> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ProverError("IO", "cannot open " + path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Writes `content` and a newline, replacing the file.
inline void writeFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw ProverError("IO", "cannot write " + path);
  out << content << "\n";
  if (!out) throw ProverError("IO", "cannot write " + path);
}

// Runs `body`; an error becomes one line on stderr (with its code when it has one) and EXIT_FAILURE.
template <class Body>
int runCommand(Body&& body) {
  try {
    body();
  } catch (const ProverError& e) {
    std::fprintf(stderr, "Error (%s): %s\n", e.code().c_str(), e.what());
    return EXIT_FAILURE;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "Error: %s\n", e.what());
    return EXIT_FAILURE;
  }
  return EXIT_SUCCESS;
}

}  // namespace np
