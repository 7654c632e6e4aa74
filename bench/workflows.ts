// bench:workflows — workflow events per second over HTTP on one workflow (serialized by its row lock)
// and across many, and verify calls per second, against raw Postgres single-row inserts in the same run.
import { createHash } from 'node:crypto';
import pg from 'pg';
import { printReport } from './report';
import type { BenchReport } from './report';
import { benchStack, percentile, pool } from './stack';

const EVENTS_ONE = Number(process.env.BENCH_EVENTS_ONE ?? 400);
const EVENTS_MANY = Number(process.env.BENCH_EVENTS_MANY ?? 2000);
const WORKFLOWS = Number(process.env.BENCH_WORKFLOWS ?? 100);
const VERIFIES = Number(process.env.BENCH_VERIFIES ?? 1000);
const INSERTS = Number(process.env.BENCH_INSERTS ?? 4000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const PORT = Number(process.env.BENCH_PORT ?? 3998);
const TOKEN = 'op_bench_token_0123456789';
const fmt = (n: number) => n.toFixed(1);
const hex = (s: string) => createHash('sha256').update(s).digest('hex');

interface Result {
  name: string;
  n: number;
  seconds: number;
  latencies: number[];
}
const perSecond = (r: Result) => r.n / r.seconds;

async function timed(
  name: string,
  n: number,
  concurrency: number,
  fn: (i: number) => Promise<void>,
): Promise<Result> {
  const t = performance.now();
  const latencies = await pool(
    Array.from({ length: n }, (_, i) => i),
    concurrency,
    fn,
  );
  return { name, n, seconds: (performance.now() - t) / 1000, latencies };
}

async function main() {
  const stack = await benchStack();
  const base = `http://127.0.0.1:${PORT}`;
  let report: BenchReport | undefined;
  try {
    stack.spawn('api/main.ts', {
      PORT: String(PORT),
      HOST: '127.0.0.1',
      RATE_LIMIT_ENABLED: 'false',
      OPERATOR_TOKEN: TOKEN,
    });
    stack.spawn('workers/prover/main.ts');
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
    const post = async (path: string, body: unknown, expect = 200) => {
      const res = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify(body),
      });
      const json = (await res.json()) as Record<string, unknown>;
      if (res.status !== expect) throw new Error(`${path} answered ${res.status}: ${JSON.stringify(json)}`);
      return json;
    };
    const prepare = async () =>
      (await post('/api/proof-workflows/prepare', { template: 'Vendor Onboarding' }, 201)) as {
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
    const inserts = await timed('raw Postgres insert', INSERTS, CONCURRENCY, async (i) => {
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
    await raw.end();

    // Warm-up: connections, JIT, prepared plans.
    const warm = await prepare();
    await Promise.all(Array.from({ length: 20 }, (_, i) => attach(warm.workflowId, i)));

    const one = await prepare();
    const single = await timed('events, one workflow', EVENTS_ONE, CONCURRENCY, async (i) => {
      await attach(one.workflowId, i);
    });

    const many = await Promise.all(Array.from({ length: WORKFLOWS }, () => prepare()));
    const spread = await timed(`events, ${WORKFLOWS} workflows`, EVENTS_MANY, CONCURRENCY, async (i) => {
      await attach(many[i % many.length]!.workflowId, i);
    });

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
    const verifies = await timed('verify by proof id', VERIFIES, CONCURRENCY, async (i) => {
      const v = await post('/api/proof-workflows/verify', { proofId: many[i % many.length]!.proofId });
      if (v.notAltered !== true || v.inclusionValid !== true) throw new Error('verify did not confirm');
    });

    const baseline = perSecond(inserts);
    console.log(`\nbench:workflows (concurrency ${CONCURRENCY})`);
    console.log('| measure | n | per second | p50 ms | p99 ms | ratio to raw insert |');
    console.log('|---|---|---|---|---|---|');
    for (const r of [inserts, single, spread, verifies]) {
      console.log(
        `| ${r.name} | ${r.n} | ${fmt(perSecond(r))} | ${fmt(percentile(r.latencies, 50))} | ${fmt(
          percentile(r.latencies, 99),
        )} | ${(perSecond(r) / baseline).toFixed(3)} |`,
      );
    }
    console.log(
      `\nOne workflow's events are serialized by its row lock, and each event re-reads its ${EVENTS_ONE}-entry trail;` +
        ' events across workflows run in parallel.',
    );
    report = {
      bench: 'workflows',
      settings: {
        eventsOne: EVENTS_ONE,
        eventsMany: EVENTS_MANY,
        workflows: WORKFLOWS,
        inFlight: CONCURRENCY,
      },
      figures: {
        eventsOneWorkflowPerSecond: perSecond(single),
        eventsOneWorkflowRatio: perSecond(single) / baseline,
        eventsManyWorkflowsPerSecond: perSecond(spread),
        eventsManyWorkflowsRatio: perSecond(spread) / baseline,
        verifyPerSecond: perSecond(verifies),
      },
      baseline: { rawInsertPerSecond: baseline },
      target: {
        eventsOneWorkflowRatio: { min: 0.25 },
        eventsManyWorkflowsRatio: { min: 0.4 },
        verifyPerSecond: { min: 1000 },
      },
    };
  } finally {
    await stack.close();
  }
  if (report) printReport(report);
}

await main();
