// A prover process killed with SIGKILL mid-proof loses nothing and doubles nothing: the stalled proof is
// handed to a second prover process, proved and stored once; neither process logs a private input.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { terminateCurves, verifyPolicyProof } from '../../shared/zk/index';
import type { ProofRow } from '../../shared/zk/rows';
import { eventually, testApp } from '../helpers';
import type { TestApp } from '../helpers';
import { dumpDatabase, privateInputs, secretValues } from './helpers';
import { processArgs } from '../processes';

let app: TestApp;
const children: ChildProcess[] = [];
const output: string[] = [];

function startProver(): ChildProcess {
  const child = spawn(process.execPath, processArgs('prover'), {
    env: { ...process.env, PROVER_CONCURRENCY: '1', LOG_LEVEL: 'debug', PROVER_BACKEND: 'snarkjs' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d: Buffer) => output.push(d.toString()));
  child.stderr!.on('data', (d: Buffer) => output.push(d.toString()));
  children.push(child);
  return child;
}

const exited = (c: ChildProcess) =>
  c.exitCode !== null || c.signalCode !== null ? Promise.resolve() : new Promise((r) => c.once('exit', r));

beforeAll(() => {
  app = testApp();
});
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await Promise.all(children.map(exited));
  await app.close();
  await terminateCurves();
});

const rows = async (ids: string[]) =>
  (await app.deps.db('proofs').whereIn('id', ids).orderBy('id')) as ProofRow[];

describe('SIGKILL mid-proof', () => {
  it('retries the proof in a second prover process and stores it exactly once', async () => {
    const ids: string[] = [];
    for (const policy of ['threshold', 'range', 'threshold'] as const) {
      const res = await app.request
        .post('/api/proof-workflows/blind-policy/prove')
        .send({ policy, inputs: privateInputs[policy] })
        .expect(202);
      ids.push(res.body.proof.id);
    }
    const first = startProver();
    // Kill it the moment it holds a claimed, unfinished proof (one at a time: concurrency 1).
    const killed = await eventually(
      async () => {
        const running = (await rows(ids)).find((r) => r.status === 'running');
        if (running) {
          first.kill('SIGKILL');
          return running.id;
        }
        return false;
      },
      30_000,
      5,
    );
    await exited(first);
    const atKill = (await rows(ids)).find((r) => r.id === killed)!;
    expect(atKill.status, 'the proof finished before the kill').toBe('running');
    expect(atKill.input_sealed).not.toBeNull();

    startProver();
    const done = await eventually(
      async () => {
        const all = await rows(ids);
        return all.every((r) => r.status === 'succeeded') && all;
      },
      45_000,
      100,
    );
    const retried = done.find((r) => r.id === killed)!;
    // Claimed by the dead process, then by the second: two attempts, one stored proof.
    expect(retried.attempts).toBe(2);
    expect(done.filter((r) => r.id !== killed).every((r) => r.attempts === 1)).toBe(true);
    expect(await app.deps.db('proofs').whereIn('id', ids).count({ n: '*' })).toEqual([{ n: '3' }]);
    for (const r of done) {
      expect(r.input_sealed).toBeNull();
      expect(await verifyPolicyProof(r.policy, r.proof, r.public_signals)).toEqual({ valid: true });
    }
    // The row was written once: nothing changes it after it succeeded.
    const finishedAt = retried.finished_at;
    await new Promise((r) => setTimeout(r, 300));
    expect((await rows([killed]))[0]!.finished_at).toEqual(finishedAt);

    const dump = await dumpDatabase(app.deps.db);
    const logText = output.join('');
    expect(logText).toContain('prover started');
    for (const value of [...secretValues('threshold'), ...secretValues('range')]) {
      expect(logText).not.toContain(value);
      expect(dump).not.toContain(value);
    }
  }, 120_000);
});
