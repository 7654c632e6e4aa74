// Preloaded into rapidsnark by the scaling benches: its thread pool is sized by
// std::thread::hardware_concurrency(), which glibc answers with every core of the host, not the ones
// taskset leaves the process. Counting the affinity mask instead gives it as many threads as cores.
#define _GNU_SOURCE
#include <sched.h>

int get_nprocs(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return CPU_COUNT(&set);
}
