// bench:ballots — anonymous ballots end to end: proofs per second made by the voter's client (snarkjs,
// and the project's native prover when built), ballots accepted per second by the service over HTTP
// (each one a Groth16 verification and a share-locked insert), and raw Postgres inserts of a
// ballot-shaped row in the same run as the baseline. The last line is one JSON object.
import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { cpus } from 'node:os';
import { join } from 'node:path';
import bs58 from 'bs58';
import pg from 'pg';
import { createIdentity, loadBallotArtifacts, makeBallot } from '../shared/governance/ballot-client';
import type { Ballot, BallotInfo, Identity, NativeBallotProver } from '../shared/governance/ballot-client';
import { reviewMessage } from '../shared/governance/commitments';
import { terminateCurves } from '../shared/zk';
import { loadNativeProver } from '../native-prover';
import { printReport } from './report';
import type { BenchReport } from './report';
import { benchStack, httpClient, percentile, pool } from './stack';

const BALLOTS = Number(process.env.BENCH_BALLOTS ?? 200);
const SNARKJS_PROOFS = Number(process.env.BENCH_SNARKJS_PROOFS ?? 10);
const INSERTS = Number(process.env.BENCH_INSERTS ?? 2000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const PORT = Number(process.env.BENCH_PORT ?? 3996);
const TOKEN = 'op_bench_token_0123456789';
/** What the product needs: a voter waits under a second for a native proof; a room of 1024 votes in under 20 s. */
const TARGET = { nativeProofsPerSecond: 2, acceptedPerSecond: 50 };
const fmt = (n: number) => n.toFixed(1);

function wallet() {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x as string, 'base64url');
  return {
    address: bs58.encode(raw),
    sign: (m: string) => bs58.encode(sign(null, Buffer.from(m), privateKey)),
  };
}

async function proveAll(
  identities: Identity[],
  info: BallotInfo,
  artifacts: Awaited<ReturnType<typeof loadBallotArtifacts>>,
  native?: NativeBallotProver,
) {
  const ballots: Ballot[] = [];
  const start = performance.now();
  for (const [i, identity] of identities.entries()) {
    const { timings: _t, ...b } = await makeBallot({
      identity,
      info,
      choice: i % 3 === 0 ? 'no' : 'yes',
      artifacts,
      native,
    });
    ballots.push(b);
  }
  return { ballots, perSecond: identities.length / ((performance.now() - start) / 1000) };
}

async function main() {
  let report: BenchReport | undefined;
  const stack = await benchStack();
  const base = `http://127.0.0.1:${PORT}`;
  const http = httpClient(base, CONCURRENCY);
  try {
    stack.spawn('api/main.ts', {
      PORT: String(PORT),
      HOST: '127.0.0.1',
      RATE_LIMIT_ENABLED: 'false',
      OPERATOR_TOKEN: TOKEN,
    });
    for (let i = 0; ; i++) {
      if (
        await fetch(`${base}/api/health`).then(
          (r) => r.ok,
          () => false,
        )
      )
        break;
      if (i > 300) throw new Error('web did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
    const call = async (method: 'GET' | 'POST', path: string, body?: unknown, expect = 200) => {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const json = (await res.json()) as Record<string, unknown>;
      if (res.status !== expect) throw new Error(`${path} answered ${res.status}: ${JSON.stringify(json)}`);
      return json;
    };

    // A room of BALLOTS identities, one reviewer, a proposal open for the length of the run.
    const reviewer = wallet();
    const roomId = String(
      (await call('POST', '/api/governance/rooms', { name: 'Bench', members: [reviewer.address] }, 201))
        .roomId,
    );
    await call(
      'POST',
      `/api/governance/rooms/${roomId}/committees`,
      {
        slug: 'review',
        name: 'Review',
        members: [reviewer.address],
        threshold: 1,
      },
      201,
    );
    const identities: Identity[] = [];
    for (let i = 0; i < BALLOTS; i++) identities.push(await createIdentity());
    await call('POST', `/api/governance/rooms/${roomId}/identities`, {
      identityCommitments: identities.map((i) => i.commitment),
    });
    const proposalId = String(
      (
        await call(
          'POST',
          '/api/governance/proposals',
          {
            roomId,
            title: 'Bench',
            options: ['yes', 'no'],
            reviewCommittee: 'review',
            votingSeconds: 3600,
          },
          201,
        )
      ).proposalId,
    );
    await call('POST', `/api/governance/proposals/${proposalId}/review`, {
      walletPublicKey: reviewer.address,
      decision: 'approve',
      signature: reviewer.sign(reviewMessage(proposalId, 'approve')),
    });
    const key = await call('GET', `/api/governance/proposals/${proposalId}/ballot-key`);
    const tree = await call('GET', `/api/governance/rooms/${roomId}/tree`);
    const info: BallotInfo = {
      proposalId,
      roomId,
      publicKey: String(key.publicKey),
      members: tree.identityCommitments as string[],
    };
    const artifacts = await loadBallotArtifacts(join(process.cwd(), 'circuits', 'artifacts'));

    // Client: snarkjs on a sample, native (when built) on every ballot the service will take.
    await proveAll(identities.slice(0, 1), info, artifacts); // warm: wasm compile, curve
    const snark = await proveAll(identities.slice(0, SNARKJS_PROOFS), info, artifacts);
    const addon = loadNativeProver();
    const native = addon ? await addon.load(artifacts.zkey, { precompute: 'eager' }) : undefined;
    let nativeRate: number | null = null;
    let ballots: Ballot[];
    if (native) {
      await proveAll(identities.slice(0, 1), info, artifacts, native);
      const run = await proveAll(identities, info, artifacts, native);
      nativeRate = run.perSecond;
      ballots = run.ballots;
    } else {
      ballots = [
        ...snark.ballots,
        ...(await proveAll(identities.slice(SNARKJS_PROOFS), info, artifacts)).ballots,
      ];
    }

    // Baseline: raw single-row inserts of a ballot-shaped row (the same columns and sizes), same concurrency.
    const raw = new pg.Pool({ connectionString: stack.databaseUrl, max: 10 });
    await raw.query(`create table bench_ballots (proposal_id text, nullifier text, root text,
      ciphertext bytea, proof jsonb, primary key (proposal_id, nullifier))`);
    const sample = ballots[0]!;
    const rawStart = performance.now();
    const rawLatencies = await pool(
      Array.from({ length: INSERTS }, (_, i) => i),
      CONCURRENCY,
      async (i) => {
        await raw.query('insert into bench_ballots values ($1, $2, $3, $4, $5)', [
          proposalId,
          BigInt(`0x${createHash('sha256').update(String(i)).digest('hex')}`).toString(),
          sample.root,
          randomBytes(1084),
          JSON.stringify(sample.proof),
        ]);
      },
    );
    const rawRate = INSERTS / ((performance.now() - rawStart) / 1000);
    await raw.end();

    // Service: every ballot posted, CONCURRENCY in flight; each must be accepted.
    const path = `/api/governance/proposals/${proposalId}/ballots`;
    const acceptStart = performance.now();
    const acceptLatencies = await pool(ballots, CONCURRENCY, async (b) => {
      const res = await http('POST', path, JSON.stringify(b));
      if (res.status !== 201) throw new Error(`ballot answered ${res.status}: ${res.body}`);
    });
    const acceptRate = ballots.length / ((performance.now() - acceptStart) / 1000);

    console.log(
      `\nbench:ballots — ${ballots.length} ballots, concurrency ${CONCURRENCY}, ${cpus().length} cores`,
    );
    console.log('| measure | n | per second | p50 ms | p99 ms | ratio to raw insert |');
    console.log('|---|---|---|---|---|---|');
    console.log(`| client proof, snarkjs | ${SNARKJS_PROOFS} | ${fmt(snark.perSecond)} | | | |`);
    if (nativeRate !== null)
      console.log(`| client proof, native | ${ballots.length} | ${fmt(nativeRate)} | | | |`);
    console.log(
      `| raw Postgres insert | ${INSERTS} | ${fmt(rawRate)} | ${fmt(percentile(rawLatencies, 50))} | ${fmt(percentile(rawLatencies, 99))} | 1.000 |`,
    );
    console.log(
      `| ballots accepted | ${ballots.length} | ${fmt(acceptRate)} | ${fmt(percentile(acceptLatencies, 50))} | ${fmt(
        percentile(acceptLatencies, 99),
      )} | ${(acceptRate / rawRate).toFixed(3)} |`,
    );
    report = {
      bench: 'ballots',
      settings: { ballots: ballots.length, concurrency: CONCURRENCY, snarkjsProofs: SNARKJS_PROOFS },
      figures: {
        snarkjsProofsPerSecond: snark.perSecond,
        nativeProofsPerSecond: nativeRate,
        acceptedPerSecond: acceptRate,
        acceptedToRawInsertRatio: acceptRate / rawRate,
      },
      baseline: { rawInsertsPerSecond: rawRate },
      target: {
        nativeProofsPerSecond: { min: TARGET.nativeProofsPerSecond },
        acceptedPerSecond: { min: TARGET.acceptedPerSecond },
      },
    };
  } finally {
    await terminateCurves();
    await stack.close();
  }
  if (report) printReport(report);
}

await main();
process.exit(0);
