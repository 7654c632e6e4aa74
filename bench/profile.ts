// Where a phase's CPU went in a V8 CPU profile (BENCH_CPU_PROF=<dir> of bench:http or bench:workflows):
// the CPU time of each function, its callees included, over the samples inside the phase's window, per
// request; and, first, the phase's CPU by owner: each sample goes to the innermost frame of its stack
// that is not Node's own (node:*, native), named by its package or by our file, so Node's work (headers,
// socket writes) counts for whoever asked for it. The phase lines are those the bench prints on stderr (`phase <key> <n> <from µs> <to µs>`).
//   node --import tsx bench/profile.ts <profile.cpuprofile> <phases.txt> [phase] [filter regexp]
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

const [file, phasesFile, only, filter] = process.argv.slice(2);
if (!file || !phasesFile) throw new Error('usage: profile.ts <profile> <phases.txt> [phase] [filter]');
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const phases = readFileSync(phasesFile, 'utf8')
  .split('\n')
  .filter((l) => l.startsWith('phase '))
  .map((l) => {
    const [, key, n, from, to] = l.split(' ');
    return { key: key!, n: Number(n), from: Number(from), to: Number(to) };
  });
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const label = (n: Node) => {
  const c = n.callFrame;
  const where = c.url.replace(/.*node_modules\//, '').replace(/^file:\/\/.*?\/(api|shared|workers)\//, '$1/');
  return `${c.functionName || '(anonymous)'} ${where}:${c.lineNumber + 1}:${c.columnNumber}`;
};

/** The package (node_modules) or our file a frame belongs to; undefined for Node's own frames. */
const ownerOf = (n: Node): string | undefined => {
  const { url, functionName } = n.callFrame;
  if (functionName === '(garbage collector)') return 'garbage collector';
  if (!url || url.startsWith('node:')) return undefined;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  return url.replace(/^file:\/\/.*?\/(api|shared|workers|bench)\//, '$1/');
};

for (const phase of phases.filter((p) => !only || p.key === only)) {
  const inclusive = new Map<string, number>();
  const owned = new Map<string, number>();
  let total = 0;
  let t = profile.startTime;
  profile.samples.forEach((id, i) => {
    t += profile.timeDeltas[i] ?? 0;
    if (t < phase.from || t > phase.to) return;
    const dt = profile.timeDeltas[i + 1] ?? 0;
    const leaf = byId.get(id)!;
    if (leaf.callFrame.functionName === '(idle)') return;
    total += dt;
    let owner: string | undefined;
    for (let cur: number | undefined = id; cur !== undefined && !owner; cur = parent.get(cur))
      owner = ownerOf(byId.get(cur)!);
    owner ??= `node: ${leaf.callFrame.functionName || leaf.callFrame.url || '(native)'}`;
    owned.set(owner, (owned.get(owner) ?? 0) + dt);
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const l = label(byId.get(cur)!);
      if (seen.has(l)) continue;
      seen.add(l);
      inclusive.set(l, (inclusive.get(l) ?? 0) + dt);
    }
  });
  console.log(`\n${phase.key}: ${(total / 1000 / phase.n).toFixed(3)} ms of CPU a request in the profile`);
  const owners = [...owned].sort((a, b) => b[1] - a[1]);
  for (const [o, us] of owners) console.log(`${(us / 1000 / phase.n).toFixed(4).padStart(8)} ms  ${o}`);
  console.log('-- functions, callees included');
  const rows = [...inclusive]
    .filter(([l]) => !filter || new RegExp(filter).test(l))
    .sort((a, b) => b[1] - a[1])
    .slice(0, 60);
  for (const [l, us] of rows) console.log(`${(us / 1000 / phase.n).toFixed(4).padStart(8)} ms  ${l}`);
}
