// The witness anyone can run (`npm run witness`, cli/witness.ts), as its own process on loopback: it
// cosigns only what extends the latest checkpoint it cosigned, answers each refusal of C2SP
// tlog-witness with its status and writes nothing then, never rolls back under concurrent requests,
// keeps its state across restarts, and stops cleanly on SIGTERM. A verifier holding two checkpoints
// of one size with different roots, cosigned by two witnesses, finds the split view.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { cosignatureTime, logSigned, parseCheckpoint } from '../../shared/platform/translog/checkpoint';
import { splitViews } from '../../shared/platform/translog/monitor';
import { parseVkey } from '../../shared/platform/translog/note';
import { checkCheckpoint, parsePolicy } from '../../shared/platform/translog/policy';
import {
  SIZE_CONTENT_TYPE,
  formatAddCheckpoint,
  parseAddCheckpoint,
  parseSizeBody,
} from '../../shared/platform/translog/witness';
import { TestMemoryLog, logSigner, signCheckpoint, startWitness, storedState } from './fixtures/witnesses';
import type { WitnessProcess } from './fixtures/witnesses';

const dirs: string[] = [];
const running: WitnessProcess[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'px-witness-'));
  dirs.push(d);
  return d;
};
afterEach(async () => {
  await Promise.all(running.splice(0).map((w) => w.stop('SIGKILL')));
});
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function witness(dir: string, logs: string[], name = 'witness.test/w1', port?: number) {
  const w = await startWitness({ name, dir, logs, port });
  running.push(w);
  return w;
}

/** The checkpoint with the witness's answer after it, parsed: what a verifier reads. */
const withCosignature = (note: string, answer: string) => parseCheckpoint(note + answer);

describe('add-checkpoint bodies', () => {
  it('reads the specification’s example request, and reads back what it writes', () => {
    const example = [
      'old 20852014',
      'PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=',
      'jrJZDmY8Y7SyJE0MWLpLozkIVMSMZcD5kvuKxPC3swk=',
      '5+pKlUdi2LeF/BcMHBn+Ku6yhPGNCswZZD1X/6QgPd8=',
      '/6WVhPs2CwSsb5rYBH5cjHV/wSmA79abXAwhXw3Kj/0=',
      '',
      'example.com/behind-the-sofa',
      '20852163',
      'CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=',
      '',
      '— example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=',
      '— example.com/behind-the-sofa opLqBQsREYCgu6xQkYQwJr9fo45a62DN9EdmHXnZdXNqlcVGlCum2Wks+49/V6267UEjw6QUXTS5Rovnzv++qbSzm9Q=',
      '',
    ].join('\n');
    const req = parseAddCheckpoint(example);
    expect(req.oldSize).toBe(20852014);
    expect(req.proof.map((h) => h.toString('base64'))).toEqual([
      'PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=',
      'jrJZDmY8Y7SyJE0MWLpLozkIVMSMZcD5kvuKxPC3swk=',
      '5+pKlUdi2LeF/BcMHBn+Ku6yhPGNCswZZD1X/6QgPd8=',
      '/6WVhPs2CwSsb5rYBH5cjHV/wSmA79abXAwhXw3Kj/0=',
    ]);
    expect(req.checkpoint).toMatchObject({ origin: 'example.com/behind-the-sofa', size: 20852163 });
    expect(req.checkpoint.note.signatures).toHaveLength(2);
    expect(formatAddCheckpoint(req.oldSize, req.proof, req.note)).toBe(example);
    expect(parseSizeBody('20852014\n')).toBe(20852014);
    for (const bad of ['20852014', '020\n', '-1\n', '1 \n']) expect(parseSizeBody(bad)).toBeUndefined();
  });
});

describe('the witness program', () => {
  it('makes its key on first start with mode 0600, prints its vkey, and keeps it across restarts', async () => {
    const dir = tempDir();
    const printed = spawnSync(
      'npm',
      [
        'run',
        '-s',
        'witness',
        '--',
        '--name',
        'witness.test/w1',
        '--key',
        `${dir}/witness.key`,
        '--print-vkey',
      ],
      { encoding: 'utf8' },
    );
    expect(printed.status, printed.stderr).toBe(0);
    const vkey = printed.stdout.trim().split('\n').at(-1)!;
    expect(parseVkey(vkey)).toMatchObject({ name: 'witness.test/w1', type: 0x04 });
    expect(statSync(`${dir}/witness.key`).mode & 0o777).toBe(0o600);

    const log = new TestMemoryLog(logSigner('log.test/a'));
    const w = await witness(dir, [log.signer.vkey]);
    expect(w.vkey).toBe(vkey);
    expect(await w.stop()).toBe(0);
    const again = await witness(dir, [log.signer.vkey]);
    expect(again.vkey).toBe(vkey);
  });

  it('cosigns checkpoints that extend the last it cosigned, persists each, and serves the latest to monitors', async () => {
    const dir = tempDir();
    const log = new TestMemoryLog(logSigner('log.test/a')).append(3);
    const w = await witness(dir, [log.signer.vkey]);
    const key = parseVkey(w.vkey);

    const first = await w.addCheckpoint(formatAddCheckpoint(0, [], log.checkpoint()));
    expect(first.status, first.body).toBe(200);
    expect(first.body).toMatch(/^— witness\.test\/w1 [A-Za-z0-9+/=]+\n$/);
    expect(cosignatureTime(withCosignature(log.checkpoint(), first.body), key)).toBeGreaterThan(0);
    expect(storedState(dir, log.origin)).toEqual({ size: 3, root: log.tree.root(3).toString('base64') });

    log.append(4);
    const second = await w.addCheckpoint(
      formatAddCheckpoint(3, log.tree.consistencyProof(3, 7), log.checkpoint()),
    );
    expect(second.status, second.body).toBe(200);
    expect(storedState(dir, log.origin)?.size).toBe(7);
    expect((await w.logged('cosigned', 2)).map((l) => [l.oldSize, l.size])).toEqual([
      [0, 3],
      [3, 7],
    ]);

    const originHash = createHash('sha256').update(log.origin).digest('hex');
    const served = await fetch(`${w.url}/${originHash}/checkpoint`);
    expect(served.status).toBe(200);
    const cp = parseCheckpoint(await served.text());
    expect(cp.size).toBe(7);
    expect(logSigned(cp, parseVkey(log.signer.vkey))).toBe(true);
    expect(cosignatureTime(cp, key)).not.toBeNull();
    const unknown = createHash('sha256').update('log.test/none').digest('hex');
    expect((await fetch(`${w.url}/${unknown}/checkpoint`)).status).toBe(404);
  });

  it('answers each refusal of the specification with its status, and writes nothing', async () => {
    const dir = tempDir();
    const log = new TestMemoryLog(logSigner('log.test/a')).append(7);
    const fresh = new TestMemoryLog(logSigner('log.test/b')).append(2);
    const stranger = new TestMemoryLog(logSigner('log.test/unknown')).append(7);
    const impostor = logSigner('log.test/a'); // same name, another key
    const w = await witness(dir, [log.signer.vkey, fresh.signer.vkey]);
    expect((await w.addCheckpoint(formatAddCheckpoint(0, [], log.checkpoint(5)))).status).toBe(200);
    const before = readFileSync(`${dir}/state.json`);

    const cp7 = log.checkpoint(7);
    const proof5to7 = log.tree.consistencyProof(5, 7);
    const [text7, sig7] = cp7.split('\n\n') as [string, string];
    const flipped = (line: string) => {
      const b64 = line.slice(line.lastIndexOf(' ') + 1, -1);
      const bytes = Buffer.from(b64, 'base64');
      bytes[bytes.length - 1]! ^= 1;
      return `${line.slice(0, line.lastIndexOf(' ') + 1)}${bytes.toString('base64')}\n`;
    };
    const fork = new TestMemoryLog(log.signer, 'fork').append(7);
    const forkAt5 = new TestMemoryLog(log.signer, 'fork').append(5);
    const tamperedProof = proof5to7.map((h, i) => (i === 0 ? Buffer.from(h).fill(7) : h));
    const cases: Array<[string, string | Buffer, number, string?]> = [
      ['garbage', 'hello\n', 400],
      ['not UTF-8', Buffer.from([0x6f, 0x6c, 0x64, 0x20, 0xff, 0x0a]), 400],
      ['an old size with a leading zero', `old 05\n\n${cp7}`, 400],
      ['no blank line after the proof', `old 5\n${proof5to7[0]!.toString('base64')}\n`, 400],
      [
        '64 proof lines',
        formatAddCheckpoint(5, [], cp7).replace(
          '\n',
          `\n${`${Buffer.alloc(32).toString('base64')}\n`.repeat(64)}`,
        ),
        400,
      ],
      ['a proof line that is no hash', `old 5\nnot-base64\n\n${cp7}`, 400],
      ['no checkpoint', 'old 5\n\nlog.test/a\n7\n', 400],
      ['an old size above the checkpoint size', formatAddCheckpoint(8, proof5to7, cp7), 400],
      ['an unknown origin', formatAddCheckpoint(0, [], stranger.checkpoint()), 404],
      [
        'a log signature by another key of the same name',
        formatAddCheckpoint(5, proof5to7, signCheckpoint([impostor], log.origin, 7, log.tree.root(7))),
        403,
      ],
      [
        'the trusted key’s signature, altered',
        formatAddCheckpoint(5, proof5to7, `${text7}\n\n${flipped(sig7)}`),
        403,
      ],
      [
        'a valid and an altered signature of the trusted key',
        formatAddCheckpoint(5, proof5to7, `${text7}\n\n${sig7}${flipped(sig7)}`),
        403,
      ],
      [
        'a rollback: a checkpoint smaller than the latest cosigned',
        formatAddCheckpoint(3, [], log.checkpoint(3)),
        409,
        '5\n',
      ],
      ['an old size other than the latest cosigned', formatAddCheckpoint(0, [], cp7), 409, '5\n'],
      ['a consistency proof that does not verify', formatAddCheckpoint(5, tamperedProof, cp7), 422],
      ['the same size with another root', formatAddCheckpoint(5, [], forkAt5.checkpoint()), 422],
      [
        'a larger tree that does not extend the cosigned one',
        formatAddCheckpoint(5, proof5to7, fork.checkpoint()),
        422,
      ],
      [
        'size 0 with a root other than the empty tree’s',
        formatAddCheckpoint(0, [], signCheckpoint([fresh.signer], fresh.origin, 0, fresh.tree.root(2))),
        422,
      ],
      [
        'a proof from size 0',
        formatAddCheckpoint(0, fresh.tree.consistencyProof(1, 2), fresh.checkpoint()),
        422,
      ],
    ];
    for (const [what, body, status, answer] of cases) {
      const res = await w.addCheckpoint(body);
      expect(res.status, `${what}: ${res.body}`).toBe(status);
      if (status === 409) {
        expect(res.type).toBe(SIZE_CONTENT_TYPE);
        expect(res.body).toBe(answer);
      }
      expect(readFileSync(`${dir}/state.json`).equals(before), what).toBe(true);
    }
    expect((await fetch(`${w.url}/add-checkpoint`)).status).toBe(405);
    const huge = await fetch(`${w.url}/add-checkpoint`, { method: 'POST', body: 'x'.repeat(70_000) });
    expect(huge.status).toBe(413);
    expect(readFileSync(`${dir}/state.json`).equals(before)).toBe(true);
    expect(storedState(dir, fresh.origin)).toBeUndefined();

    // Every refusal of a checkpoint the log signed is kept whole in the witness's log as evidence, with
    // what it had cosigned; one the log did not sign is noted without its body; an unknown log not at all.
    const evidence = await w.logged('refused a checkpoint of a known log', 8);
    expect(evidence.map((l) => l.status)).toEqual([400, 409, 409, 422, 422, 422, 422, 422]);
    const unsigned = await w.logged('refused a checkpoint the log did not sign', 3);
    expect(unsigned.map((l) => [l.status, l.origin, l.checkpoint])).toEqual(
      Array(3).fill([403, log.origin, undefined]),
    );
    expect(w.lines.some((l) => l.origin === stranger.origin)).toBe(false);
    const split = evidence.find(
      (l) => l.reason === 'the same size as the latest cosigned checkpoint, with another root',
    )!;
    expect(split.checkpoint).toBe(forkAt5.checkpoint());
    expect(parseCheckpoint(split.latest as string).root.equals(log.tree.root(5))).toBe(true);
  });

  it('never rolls back under concurrent add-checkpoints of different sizes (the specification’s race)', async () => {
    const dir = tempDir();
    const log = new TestMemoryLog(logSigner('log.test/a')).append(200);
    const w = await witness(dir, [log.signer.vkey]);
    let current = 4;
    expect((await w.addCheckpoint(formatAddCheckpoint(0, [], log.checkpoint(current)))).status).toBe(200);
    for (let round = 0; round < 6; round++) {
      // Eight requests from the current size to eight larger ones, and one from an older size, at once.
      const sizes = Array.from({ length: 8 }, (_, i) => current + 1 + i * 3 + (round % 3));
      const answers = await Promise.all([
        ...sizes.map((n) =>
          w.addCheckpoint(
            formatAddCheckpoint(current, log.tree.consistencyProof(current, n), log.checkpoint(n)),
          ),
        ),
        w.addCheckpoint(formatAddCheckpoint(0, [], log.checkpoint(current + 1))),
      ]);
      const won = sizes.filter((_, i) => answers[i]!.status === 200);
      expect(won, `round ${round}`).toHaveLength(1);
      // The others were checked after the winner's update: each is told the winner's size.
      for (const a of answers.slice(0, sizes.length).filter((x) => x.status !== 200))
        expect([a.status, a.body]).toEqual([409, `${won[0]}\n`]);
      expect(answers.at(-1)!.status).toBe(409);
      expect(storedState(dir, log.origin)?.size).toBe(won[0]);
      current = won[0]!;
    }
  });

  it('keeps its state across a SIGTERM and a restart, and still refuses a rollback', async () => {
    const dir = tempDir();
    const log = new TestMemoryLog(logSigner('log.test/a')).append(6);
    const w = await witness(dir, [log.signer.vkey]);
    expect((await w.addCheckpoint(formatAddCheckpoint(0, [], log.checkpoint(6)))).status).toBe(200);
    expect(await w.stop('SIGTERM')).toBe(0);
    expect(w.lines.some((l) => l.msg === 'stopping')).toBe(true);
    expect(existsSync(`${dir}/state.json.lock`)).toBe(false);

    const again = await witness(dir, [log.signer.vkey]);
    const rollback = await again.addCheckpoint(formatAddCheckpoint(0, [], log.checkpoint(2)));
    expect([rollback.status, rollback.body, rollback.type]).toEqual([409, '6\n', SIZE_CONTENT_TYPE]);
    const fork = new TestMemoryLog(log.signer, 'fork').append(6);
    expect((await again.addCheckpoint(formatAddCheckpoint(6, [], fork.checkpoint()))).status).toBe(422);
    expect(storedState(dir, log.origin)?.size).toBe(6);
    log.append(2);
    const on = await again.addCheckpoint(
      formatAddCheckpoint(6, log.tree.consistencyProof(6, 8), log.checkpoint()),
    );
    expect(on.status).toBe(200);
  });

  it('refuses to start beside another witness on the same state, and on a state file it cannot read', async () => {
    const dir = tempDir();
    const log = new TestMemoryLog(logSigner('log.test/a'));
    await witness(dir, [log.signer.vkey]);
    await expect(witness(dir, [log.signer.vkey], 'witness.test/w1')).rejects.toThrow(/another witness/);

    const broken = tempDir();
    writeFileSync(`${broken}/state.json`, '{"format":"something else"}');
    await expect(witness(broken, [log.signer.vkey])).rejects.toThrow(/not a witness state/);
    expect(readFileSync(`${broken}/state.json`, 'utf8')).toBe('{"format":"something else"}');
  });

  it('reads a config file, whose relative paths are its folder’s', async () => {
    const dir = tempDir();
    const log = new TestMemoryLog(logSigner('log.test/a')).append(1);
    writeFileSync(
      `${dir}/witness.json`,
      JSON.stringify({
        name: 'witness.test/cfg',
        key: 'k',
        state: 's.json',
        logs: [{ origin: log.origin, vkey: log.signer.vkey }],
        prefix: '/w',
      }),
    );
    const w = await startWitness({
      name: 'witness.test/cfg',
      logs: [],
      extra: ['--config', `${dir}/witness.json`],
    });
    running.push(w);
    expect(w.url).toMatch(/\/w$/);
    expect((await w.addCheckpoint(formatAddCheckpoint(0, [], log.checkpoint()))).status).toBe(200);
    expect(statSync(`${dir}/k`).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(`${dir}/s.json`, 'utf8')).logs[log.origin].size).toBe(1);
  });
});

describe('split view', () => {
  it('one witness refuses the second root of a size; two witnesses shown one each let a verifier holding both find it', async () => {
    const signer = logSigner('log.test/a');
    const honest = new TestMemoryLog(signer).append(5);
    const forked = new TestMemoryLog(signer, 'fork').append(2, 'main').append(3, 'fork');
    expect(forked.tree.root(2).equals(honest.tree.root(2))).toBe(true);
    expect(forked.tree.root(5).equals(honest.tree.root(5))).toBe(false);
    const w1 = await witness(tempDir(), [signer.vkey], 'witness.test/w1');
    const w2 = await witness(tempDir(), [signer.vkey], 'witness.test/w2');

    const a = honest.checkpoint();
    const b = forked.checkpoint();
    const c1 = await w1.addCheckpoint(formatAddCheckpoint(0, [], a));
    expect(c1.status).toBe(200);
    // One witness shown both: the second is refused.
    expect((await w1.addCheckpoint(formatAddCheckpoint(5, [], b))).status).toBe(422);
    // Two witnesses shown one each: each cosigns.
    const c2 = await w2.addCheckpoint(formatAddCheckpoint(0, [], b));
    expect(c2.status).toBe(200);

    const policy = parsePolicy(
      `log ${signer.vkey}\nwitness w1 ${w1.vkey}\nwitness w2 ${w2.vkey}\ngroup any-one any w1 w2\nquorum any-one\n`,
    );
    const seenByOne = a + c1.body;
    const seenByOther = b + c2.body;
    // Each verifier alone accepts what it was shown.
    expect(checkCheckpoint(policy, parseCheckpoint(seenByOne)).ok).toBe(true);
    expect(checkCheckpoint(policy, parseCheckpoint(seenByOther)).ok).toBe(true);
    // Holding both, the split is found.
    const found = splitViews(policy, [seenByOne, seenByOther]);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({
      origin: 'log.test/a',
      size: 5,
      roots: [honest.tree.root(5).toString('base64'), forked.tree.root(5).toString('base64')],
      cosigners: [['w1'], ['w2']],
    });

    // Not a split: the same checkpoint twice, another size, one the log never signed, one no witness cosigned.
    const impostor = logSigner('log.test/a');
    expect(splitViews(policy, [seenByOne, seenByOne])).toEqual([]);
    expect(splitViews(policy, [seenByOne, forked.checkpoint(4)])).toEqual([]);
    expect(
      splitViews(policy, [seenByOne, signCheckpoint([impostor], 'log.test/a', 5, forked.tree.root(5))]),
    ).toEqual([]);
    expect(splitViews(policy, [seenByOne, b])).toEqual([]);
    expect(splitViews(policy, ['not a checkpoint\n', seenByOne])).toEqual([]);
  });
});
