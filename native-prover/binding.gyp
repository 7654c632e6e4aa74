{
  "target_defaults": {
    "cflags!": ["-fno-exceptions"],
    "cflags_cc!": ["-fno-exceptions", "-fno-rtti", "-std=gnu++17", "-O2", "-O3"],
    "cflags_cc": ["-std=c++17", "-O3", "-fexceptions", "-Wall", "-Wextra", "-Wno-unused-parameter"],
    "ldflags": ["-pthread"]
  },
  "targets": [
    {
      "target_name": "native_prover",
      "sources": ["src/addon.cpp", "src/prover.cpp", "src/verify.cpp"]
    },
    {
      "target_name": "prover",
      "type": "executable",
      "sources": ["src/cli.cpp", "src/prover.cpp"]
    }
  ]
}
