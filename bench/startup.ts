// bench:startup — each Procfile process type started as the Procfile runs it (plain node on the build in
// dist/, `npm run build`) against the same process started from its TypeScript sources through tsx (what
// the Procfile ran before there was a build), measured in the same run: the time from spawn to the
// line that says it is ready (`web listening`, `worker started`, `prover started`; release: its exit),
// the CPU it spent getting there, and its resident memory then (VmRSS) and at its peak (VmHWM). Rounds
// interleave the two ways and the four types; each figure is the median over the rounds.
//   npm run build && npm run bench:startup
// BENCH_ROUNDS (7).
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { processEntries } from '../scripts/build';
import { printReport } from './report';
import { benchStack } from './stack';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const types = ['release', 'web', 'worker', 'prover'] as const;
type Type = (typeof types)[number];
const source: Record<Type, string> = {
  release: processEntries[0]!,
  web: processEntries[1]!,
  worker: processEntries[2]!,
  prover: processEntries[3]!,
};
const readyLine: Record<Type, string | null> = {
  release: null,
  web: 'web listening',
  worker: 'worker started',
  prover: 'prover started',
};
const procfile = Object.fromEntries(
  [...readFileSync('Procfile', 'utf8').matchAll(/^(\w+): node (.+)$/gm)].map((m) => [
    m[1]!,
    m[2]!.split(' '),
  ]),
) as Record<Type, string[]>;
const ways = {
  built: (t: Type) => procfile[t],
  tsx: (t: Type) => ['--import', 'tsx', source[t]],
};
type Way = keyof typeof ways;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** VmRSS and VmHWM of a process, in MiB, and its CPU (user + system) in ms. */
function sample(pid: number): { rss: number; peak: number; cpuMs: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? NaN);
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return { rss: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024, cpuMs: ticks * 10 };
}

interface Start {
  ms: number;
  cpuMs: number;
  rss: number;
  peak: number;
}

async function startOnce(way: Way, type: Type, env: NodeJS.ProcessEnv): Promise<Start> {
  const t0 = performance.now();
  const child = spawn(process.execPath, ways[way](type), { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const ready = readyLine[type];
  let result: Start | undefined;
  if (ready) {
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (!result && out.includes(`"msg":"${ready}"`)) {
          result = { ms: performance.now() - t0, ...sample(child.pid!) };
          resolve();
        }
      });
      void exited.then((code) =>
        reject(new Error(`${way} ${type} exited (${code}): ${err}${out.slice(-800)}`)),
      );
    });
    child.kill('SIGTERM');
    await exited;
  } else {
    // release runs to its end: its figures are the whole run, its memory the peak (read just before
    // it exits, through a pipe it holds open until then).
    let last = { rss: NaN, peak: NaN, cpuMs: NaN };
    const poll = setInterval(() => {
      try {
        last = sample(child.pid!);
      } catch {
        // gone
      }
    }, 20);
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const code = await exited;
    clearInterval(poll);
    if (code !== 0) throw new Error(`${way} release exited ${code}: ${err}${out}`);
    result = { ms: performance.now() - t0, ...last };
  }
  return result!;
}

async function main() {
  if (!existsSync(procfile.web[procfile.web.length - 1]!))
    throw new Error('no build in dist/: run `npm run build` first');
  const stack = await benchStack();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: 'development',
    DATABASE_URL: stack.databaseUrl,
    REDIS_URL: stack.redisUrl,
    QUEUE_PREFIX: stack.prefix,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'info',
    DEVNET: 'off',
    PROVER_CONCURRENCY: '1',
  };
  const runs: Record<string, Start[]> = {};
  const load: number[] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const order = (round % 2 ? ['tsx', 'built'] : ['built', 'tsx']) as Way[];
      for (const type of types)
        for (const way of order) {
          const s = await startOnce(way, type, env);
          (runs[`${type}.${way}`] ??= []).push(s);
          load.push(loadavg()[0]!);
        }
    }
  } finally {
    await stack.close();
  }
  const figures: Record<string, number> = {};
  const baseline: Record<string, number> = {};
  for (const type of types) {
    for (const [key, pick] of [
      ['ms', (s: Start) => s.ms],
      ['cpuMs', (s: Start) => s.cpuMs],
      ['rssMiB', (s: Start) => s.rss],
      ['peakMiB', (s: Start) => s.peak],
    ] as const) {
      const built = median(runs[`${type}.built`]!.map(pick));
      const tsx = median(runs[`${type}.tsx`]!.map(pick));
      figures[`${type}.${key}`] = built;
      baseline[`${type}.${key}`] = tsx;
      figures[`${type}.${key}.ratio`] = built / tsx;
    }
    console.log(
      `${type.padEnd(8)} ready ${figures[`${type}.ms`]!.toFixed(0)} ms vs ${baseline[`${type}.ms`]!.toFixed(0)} ms under tsx (${figures[`${type}.ms.ratio`]!.toFixed(2)}x); CPU ${figures[`${type}.cpuMs`]!.toFixed(0)} vs ${baseline[`${type}.cpuMs`]!.toFixed(0)} ms; RSS ${figures[`${type}.rssMiB`]!.toFixed(0)} vs ${baseline[`${type}.rssMiB`]!.toFixed(0)} MiB, peak ${figures[`${type}.peakMiB`]!.toFixed(0)} vs ${baseline[`${type}.peakMiB`]!.toFixed(0)} MiB`,
    );
  }
  figures.load = median(load);
  printReport({
    bench: 'startup',
    settings: { rounds: ROUNDS, mode: 'development settings, DEVNET off' },
    figures,
    baseline,
    target: Object.fromEntries(types.map((t) => [`${t}.ms.ratio`, { max: 1 }])),
  });
}

await main();
