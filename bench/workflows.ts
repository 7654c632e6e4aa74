// bench:workflows — workflow events per second over HTTP on one workflow (every event extends one chain)
// and across many, and verify calls per second on finished workflows, against raw Postgres single-row
// inserts measured in the same run (before, between and after the event phases; each event phase is set
// against the two insert runs around it). Each phase also reports the CPU it cost per operation, by process
// (web, Postgres backends of the bench database, this driver), from /proc; a floor phase (a GET that
// runs one select) shows what any request of this app costs before the route does its own work; and a
// bare Express 5 app inserting the raw insert's row (runs before, between and after, like the inserts)
// shows the most any write over HTTP reaches on the host: each event phase is set against it as well.
//   npm run bench:workflows
// BENCH_CPU_PROF=<dir> writes a V8 CPU profile of each child process there.
import { createHash } from 'node:crypto';
import pg from 'pg';
import { printReport } from './report';
import type { BenchReport } from './report';
import { benchStack, cpuByRole, cpuPerOp, httpClient, percentile, pool, settled } from './stack';

const EVENTS_ONE = Number(process.env.BENCH_EVENTS_ONE ?? 2000);
const EVENTS_MANY = Number(process.env.BENCH_EVENTS_MANY ?? 2000);
const WORKFLOWS = Number(process.env.BENCH_WORKFLOWS ?? 100);
const VERIFIES = Number(process.env.BENCH_VERIFIES ?? 2000);
const INSERTS = Number(process.env.BENCH_INSERTS ?? 4000);
const FLOOR = Number(process.env.BENCH_FLOOR ?? 2000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const PORT = Number(process.env.BENCH_PORT ?? 3998);
const BARE_PORT = Number(process.env.BENCH_BARE_PORT ?? 3997);
const TOKEN = 'op_bench_token_0123456789';
const TEMPLATE = 'Vendor Onboarding';
const fmt = (n: number) => n.toFixed(1);
const hex = (s: string) => createHash('sha256').update(s).digest('hex');

interface Result {
  name: string;
  n: number;
  seconds: number;
  latencies: number[];
  /** CPU ms per operation by process role. */
  cpu: Record<string, number>;
}
const perSecond = (r: Result) => r.n / r.seconds;

async function main() {
  const stack = await benchStack();
  const base = `http://127.0.0.1:${PORT}`;
  let report: BenchReport | undefined;
  const probe = new pg.Client({ connectionString: stack.databaseUrl });
  try {
    const web = stack.spawn('api/main.ts', {
      PORT: String(PORT),
      HOST: '127.0.0.1',
      // A closed loop measures what a request costs: its requests are never shed for their time in
      // the process (bench:overload measures shedding).
      OVERLOAD_TARGET_MS: '0',
      RATE_LIMIT_ENABLED: 'false',
      OPERATOR_TOKEN: TOKEN,
    });
    const prover = stack.spawn('workers/prover/main.ts');
    // The ceiling for any write over HTTP on this host: a bare Express 5 app that inserts the raw
    // insert's row (bench/http.ts, its bare role), so each event phase is also set against it.
    const bare = stack.spawn('bench/http.ts', {
      BENCH_HTTP_ROLE: 'bare',
      BENCH_BARE_PORT: String(BARE_PORT),
    });
    for (let i = 0; ; i++) {
      if (
        await fetch(`${base}/api/health`).then(
          (r) => r.ok,
          () => false,
        )
      )
        break;
      if (i > 200) throw new Error('web did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
    await probe.connect();
    const roles = { web: [web.pid!], prover: [prover.pid!], bare: [bare.pid!] };
    // The prover loads its keys and builds their tables as it starts: the baseline waits for it.
    const waited = await settled([web.pid!, prover.pid!]);
    console.log(`bench: the web and prover processes settled after ${(waited / 1000).toFixed(1)} s`);
    const timed = async (
      name: string,
      n: number,
      concurrency: number,
      fn: (i: number) => Promise<void>,
    ): Promise<Result> => {
      const before = await cpuByRole(roles, probe);
      const t = performance.now();
      const from = process.hrtime.bigint();
      const latencies = await pool(
        Array.from({ length: n }, (_, i) => i),
        concurrency,
        fn,
      );
      const seconds = (performance.now() - t) / 1000;
      // The phase's window on the monotonic clock the CPU profiles' sample times use (µs).
      if (process.env.BENCH_CPU_PROF)
        console.error(`phase ${JSON.stringify(name)} ${from / 1000n} ${process.hrtime.bigint() / 1000n}`);
      return { name, n, seconds, latencies, cpu: cpuPerOp(before, await cpuByRole(roles, probe), n) };
    };

    const call = httpClient(base, CONCURRENCY, { authorization: `Bearer ${TOKEN}` });
    const post = async (path: string, body: unknown, expect = 200) => {
      const res = await call('POST', path, JSON.stringify(body));
      if (res.status !== expect) throw new Error(`${path} answered ${res.status}: ${res.body}`);
      return JSON.parse(res.body) as Record<string, unknown>;
    };
    const prepare = async () =>
      (await post('/api/proof-workflows/prepare', { template: TEMPLATE }, 201)) as {
        workflowId: string;
        proofId: string;
      };
    const attach = (workflowId: string, i: number) =>
      post('/api/proof-workflows/event', {
        workflowId,
        stage: 'application',
        action: 'attach_evidence',
        actorCommitment: hex(`bench actor ${i % 7}`),
        evidenceHash: hex(`bench document ${i}`),
      });

    // Baseline: single-row autocommit inserts of an audit-entry-shaped row, same concurrency.
    const raw = new pg.Pool({ connectionString: stack.databaseUrl, max: 10 });
    await raw.query(`create table bench_inserts (id bigserial primary key, workflow_id text, seq int, stage text,
      action text, actor_commitment text, evidence_commitment text, at text, prev_hash text, entry_hash text)`);
    const bareCall = httpClient(`http://127.0.0.1:${BARE_PORT}`, CONCURRENCY);
    let bareInserted = 0;
    const bareRun = (name: string) =>
      timed(name, INSERTS, CONCURRENCY, async () => {
        const i = bareInserted++;
        const res = await bareCall(
          'POST',
          '/inserts',
          JSON.stringify({
            workflowId: `wf_${i % 100}`,
            seq: i,
            actor: hex(`a${i}`),
            evidence: hex(`e${i}`),
            prev: hex(`p${i}`),
            hash: hex(`h${i}`),
          }),
        );
        if (res.status !== 200) throw new Error(`bare insert answered ${res.status}`);
      });
    let inserted = 0;
    const insertRun = (name: string) =>
      timed(name, INSERTS, CONCURRENCY, async () => {
        const i = inserted++;
        await raw.query(
          `insert into bench_inserts (workflow_id, seq, stage, action, actor_commitment, evidence_commitment, at, prev_hash, entry_hash)
           values ($1, $2, 'application', 'attach_evidence', $3, $4, $5, $6, $7)`,
          [
            `wf_${i % 100}`,
            i,
            hex(`a${i}`),
            hex(`e${i}`),
            new Date().toISOString(),
            hex(`p${i}`),
            hex(`h${i}`),
          ],
        );
      });
    // One unmeasured run first (the pool's connections, the driver's JIT: a cold run was half the warm
    // rate), then runs before, between and after the event phases, each phase set against the two runs
    // around it: a shared host's speed drifts within a run.
    await insertRun('raw Postgres insert (warm-up)');
    const insertsBefore = await insertRun('raw Postgres insert (before events)');
    await bareRun('bare Express insert (warm-up)');
    const bareBefore = await bareRun('bare Express 5: POST + one insert (before events)');

    // Warm-up: connections, JIT, prepared plans.
    const warm = await prepare();
    await Promise.all(Array.from({ length: 50 }, (_, i) => attach(warm.workflowId, i)));

    const one = await prepare();
    const single = await timed('events, one workflow', EVENTS_ONE, CONCURRENCY, async (i) => {
      await attach(one.workflowId, i);
    });
    const insertsBetween = await insertRun('raw Postgres insert (between)');
    const bareBetween = await bareRun('bare Express 5: POST + one insert (between)');

    const many = await Promise.all(Array.from({ length: WORKFLOWS }, () => prepare()));
    const spread = await timed(`events, ${WORKFLOWS} workflows`, EVENTS_MANY, CONCURRENCY, async (i) => {
      await attach(many[i % many.length]!.workflowId, i);
    });
    const insertsAfter = await insertRun('raw Postgres insert (after events)');
    const bareAfter = await bareRun('bare Express 5: POST + one insert (after events)');
    await raw.end();

    // Finish the many workflows so verify covers records, signature and log inclusion.
    const finishStage = async (workflowId: string) => {
      const ev = (stage: string, action: string, who: string, evidence?: string) =>
        post('/api/proof-workflows/event', {
          workflowId,
          stage,
          action,
          actorCommitment: hex(who),
          ...(evidence ? { evidenceHash: hex(evidence) } : {}),
        });
      await ev('application', 'submit', 'vendor');
      for (const stage of ['due_diligence', 'security_review']) {
        await ev(stage, 'attach_evidence', 'analyst', `${workflowId} ${stage}`);
        await ev(stage, 'approve', `${stage} reviewer`);
      }
      await ev('approval', 'approve', 'procurement');
    };
    await pool(many, 8, async (w) => finishStage(w.workflowId));
    for (let i = 0; ; i++) {
      const head = (await (await fetch(`${base}/api/proof-workflows/log/head`)).json()) as {
        treeSize: number;
      };
      if (head.treeSize >= many.length) break;
      if (i > 600) throw new Error('packages were not logged in time');
      await new Promise((r) => setTimeout(r, 100));
    }
    const verifyOne = async (proofId: string) => {
      const v = await post('/api/proof-workflows/verify', { proofId });
      if (v.notAltered !== true || v.inclusionValid !== true) throw new Error('verify did not confirm');
    };
    // Each workflow's first verify, then verifies over and over (a package seen before is not re-checked).
    const firstVerifies = await timed('verify, first time', many.length, CONCURRENCY, async (i) =>
      verifyOne(many[i]!.proofId),
    );
    const verifies = await timed('verify by proof id', VERIFIES, CONCURRENCY, async (i) =>
      verifyOne(many[i % many.length]!.proofId),
    );

    // The floor any route of this app stands on: HTTP, the middleware and one indexed select.
    const floor = await timed('floor: GET log head (HTTP + one select)', FLOOR, CONCURRENCY, async () => {
      const res = await call('GET', '/api/proof-workflows/log/head');
      if (res.status !== 200) throw new Error(`log head answered ${res.status}`);
    });

    const insertRuns = [insertsBefore, insertsBetween, insertsAfter];
    const inserts: Result = {
      name: 'raw Postgres insert (all three)',
      n: insertRuns.reduce((a, r) => a + r.n, 0),
      seconds: insertRuns.reduce((a, r) => a + r.seconds, 0),
      latencies: insertRuns.flatMap((r) => r.latencies),
      cpu: Object.fromEntries(
        Object.keys(insertsBefore.cpu).map((k) => [
          k,
          insertRuns.reduce((a, r) => a + (r.cpu[k] ?? 0), 0) / insertRuns.length,
        ]),
      ),
    };
    const baseline = perSecond(inserts);
    const around = (a: Result, b: Result) => (perSecond(a) + perSecond(b)) / 2;
    // What each phase is set against: the event phases, the inserts around them; the rest, all of them.
    const against = new Map<Result, number>([
      [single, around(insertsBefore, insertsBetween)],
      [spread, around(insertsBetween, insertsAfter)],
    ]);
    // ... and the event phases against the bare Express inserts around them: the most any write over
    // HTTP reaches here.
    const aroundBare = new Map<Result, number>([
      [single, around(bareBefore, bareBetween)],
      [spread, around(bareBetween, bareAfter)],
    ]);
    const bareRuns = [bareBefore, bareBetween, bareAfter];
    const bareBaseline = bareRuns.reduce((a, r) => a + r.n, 0) / bareRuns.reduce((a, r) => a + r.seconds, 0);
    const phases = [...insertRuns, inserts, ...bareRuns, floor, single, spread, firstVerifies, verifies];
    const cpuRoles = ['web', 'postgres', 'driver'];
    console.log(
      `\nbench:workflows (${CONCURRENCY} in flight; ${TEMPLATE}: ${WORKFLOWS} workflows of ${EVENTS_MANY / WORKFLOWS + 7} entries for verify)`,
    );
    console.log(
      `| measure | n | per second | p50 ms | p99 ms | ratio to raw insert | ratio to bare Express insert | CPU ms/op ${cpuRoles.join(' / ')} |`,
    );
    console.log('|---|---|---|---|---|---|---|---|');
    for (const r of phases) {
      console.log(
        `| ${r.name} | ${r.n} | ${fmt(perSecond(r))} | ${fmt(percentile(r.latencies, 50))} | ${fmt(
          percentile(r.latencies, 99),
        )} | ${(perSecond(r) / (against.get(r) ?? baseline)).toFixed(3)} | ${(perSecond(r) / (aroundBare.get(r) ?? bareBaseline)).toFixed(3)} | ${cpuRoles.map((k) => (r.cpu[k] ?? NaN).toFixed(2)).join(' / ')} |`,
      );
    }
    const cpuFigures = (prefix: string, r: Result) =>
      Object.fromEntries(cpuRoles.map((k) => [`${prefix}.${k}`, r.cpu[k] ?? null]));
    report = {
      bench: 'workflows',
      settings: {
        eventsOne: EVENTS_ONE,
        eventsMany: EVENTS_MANY,
        workflows: WORKFLOWS,
        verifies: VERIFIES,
        inserts: INSERTS,
        inFlight: CONCURRENCY,
        template: TEMPLATE,
      },
      figures: {
        eventsOneWorkflowPerSecond: perSecond(single),
        eventsOneWorkflowRatio: perSecond(single) / against.get(single)!,
        eventsManyWorkflowsPerSecond: perSecond(spread),
        eventsManyWorkflowsRatio: perSecond(spread) / against.get(spread)!,
        eventsOneWorkflowBareRatio: perSecond(single) / aroundBare.get(single)!,
        eventsManyWorkflowsBareRatio: perSecond(spread) / aroundBare.get(spread)!,
        verifyPerSecond: perSecond(verifies),
        verifyFirstPerSecond: perSecond(firstVerifies),
        floorPerSecond: perSecond(floor),
        ...cpuFigures('cpuMsPerEventOne', single),
        ...cpuFigures('cpuMsPerEventMany', spread),
        ...cpuFigures('cpuMsPerVerify', verifies),
        ...cpuFigures('cpuMsPerVerifyFirst', firstVerifies),
        ...cpuFigures('cpuMsPerFloor', floor),
      },
      baseline: {
        rawInsertPerSecond: baseline,
        rawInsertPerSecondBefore: perSecond(insertsBefore),
        rawInsertPerSecondBetween: perSecond(insertsBetween),
        rawInsertPerSecondAfter: perSecond(insertsAfter),
        bareInsertPerSecond: bareBaseline,
        bareInsertRatioToRaw: bareBaseline / baseline,
        ...cpuFigures('cpuMsPerInsert', inserts),
      },
      target: {
        eventsOneWorkflowRatio: { min: 0.25 },
        eventsManyWorkflowsRatio: { min: 0.4 },
        verifyPerSecond: { min: 1000 },
      },
    };
  } finally {
    await probe.end().catch(() => undefined);
    await stack.close();
  }
  if (report) printReport(report);
}

await main();
