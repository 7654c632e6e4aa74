import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import SlowFirst from './test/setup/sequencer';

// Test files spend most of their time waiting on Postgres, Redis, chains and child processes, so a few
// run at once even on two cores. They share each worker's loaded libraries (isolate off: loading viem,
// snarkjs and the rest again for each of 140 files cost more than many files' tests), while
// test/setup/file.ts gives each file a fresh environment, database, queue prefix and project modules.
// TEST_WORKERS sets how many files run at once.
const workers = Number(process.env.TEST_WORKERS) || Math.max(3, Math.min(6, availableParallelism() + 1));

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    isolate: false,
    maxWorkers: workers,
    globalSetup: ['test/setup/global.ts'],
    setupFiles: ['test/setup/file.ts'],
    sequence: { sequencer: SlowFirst },
  },
});
