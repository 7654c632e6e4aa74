// The trust root and the key history: the document parsed and refused when it lies about itself, the key
// an item's signature is checked with (each reason a key is not one), the history's rules (a new key
// opens its period and closes no other; a retired key is never reopened; retiring is refused while
// nothing else could sign), a process that refuses to sign or start with a closed key, the route with
// its ETag, and a license under a revoked key. Real Postgres, this file's own database.
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signingKeyFromSeed } from '../../shared/platform/crypto';
import type { SigningKey } from '../../shared/platform/crypto';
import {
  KeyHistoryError,
  RETIRE_GRACE_MS,
  forgetServiceTrust,
  listKeys,
  registerSigningKeys,
  retireKey,
  revokeKey,
  serviceTrust,
  watchSigningKeys,
} from '../../shared/platform/key-history';
import { SigningKeyRetired, serviceSigningKey, setKeyRefusal } from '../../shared/platform/keys';
import type { OwnKey } from '../../shared/platform/keys';
import { StartupFailure } from '../../shared/platform/failures';
import { keyFor, logVkey, parseTrustRoot } from '../../shared/platform/trust';
import type { TrustKey, TrustRoot } from '../../shared/platform/trust';
import { testApp } from '../helpers';
import type { TestApp } from '../helpers';
import { trialProof } from '../licensing/helpers';

const seed = (byte: number) => Buffer.alloc(32, byte);
const serviceRoles: OwnKey['roles'] = ['package', 'receipt', 'license', 'attestation'];
const own = (key: SigningKey, loadedAt = new Date(), roles = serviceRoles): OwnKey => ({
  variable: 'SERVICE_SIGNING_KEY',
  roles,
  key,
  loadedAt,
});

const keyA = signingKeyFromSeed(seed(0xa1));
const keyB = signingKeyFromSeed(seed(0xb2));
const keyC = signingKeyFromSeed(seed(0xc3));

let app: TestApp;
beforeAll(() => {
  app = testApp();
});
afterAll(async () => {
  await app?.close();
});
const db = () => app.deps.db;

describe('keyFor: the key an item is checked with', () => {
  const root: Pick<TrustRoot, 'keys'> = {
    keys: [
      {
        keyId: keyA.keyId,
        publicKey: keyA.publicKey,
        roles: ['package', 'license'],
        validFrom: '2026-01-01T00:00:00.000Z',
        validUntil: '2026-06-01T00:00:00.000Z',
      },
      {
        keyId: keyB.keyId,
        publicKey: keyB.publicKey,
        roles: ['package', 'license'],
        validFrom: '2026-05-01T00:00:00.000Z',
        revokedFrom: '2026-09-01T00:00:00.000Z',
      },
    ],
  };
  const reason = (v: ReturnType<typeof keyFor>) => (v.ok ? 'ok' : v.reason);

  it('finds a listed key of the role within its period, its ends included as [validFrom, validUntil)', () => {
    expect(reason(keyFor(root, keyA.keyId, 'package', '2026-03-01T00:00:00.000Z'))).toBe('ok');
    expect(reason(keyFor(root, keyA.keyId, 'package', '2026-01-01T00:00:00.000Z'))).toBe('ok');
    expect(reason(keyFor(root, keyA.keyId, 'package', '2026-06-01T00:00:00.000Z'))).toBe('expired');
    // Both current while processes move from one to the other.
    expect(
      reason(keyFor(root, keyB.keyId, 'license', '2026-05-15T00:00:00.000Z', '2026-05-15T00:00:01.000Z')),
    ).toBe('ok');
    expect(reason(keyFor(root, keyA.keyId, 'license', '2026-05-15T00:00:00.000Z'))).toBe('ok');
  });

  it('names each reason a key is not one to check with', () => {
    expect(reason(keyFor(root, keyC.keyId, 'package', '2026-03-01T00:00:00.000Z'))).toBe('unknown_key');
    expect(reason(keyFor(root, keyA.keyId, 'receipt', '2026-03-01T00:00:00.000Z'))).toBe('wrong_role');
    expect(reason(keyFor(root, keyA.keyId, 'package', '2025-12-31T23:59:59.999Z'))).toBe('not_yet_valid');
    expect(reason(keyFor(root, keyA.keyId, 'package', '2026-07-01T00:00:00.000Z'))).toBe('expired');
  });

  it('holds a revoked key only for what was logged before its revocation', () => {
    const before = '2026-08-01T00:00:00.000Z';
    const after = '2026-09-02T00:00:00.000Z';
    expect(reason(keyFor(root, keyB.keyId, 'package', before, before))).toBe('ok');
    // Its own time is no evidence: whoever holds the compromised key writes any time it likes.
    expect(reason(keyFor(root, keyB.keyId, 'package', before))).toBe('revoked');
    expect(reason(keyFor(root, keyB.keyId, 'package', before, after))).toBe('revoked');
    expect(reason(keyFor(root, keyB.keyId, 'package', after, before))).toBe('revoked');
    // An item that carries no time (a ballot receipt) holds by its log time alone.
    expect(reason(keyFor(root, keyB.keyId, 'package', undefined, before))).toBe('ok');
    expect(reason(keyFor(root, keyB.keyId, 'package', undefined))).toBe('revoked');
  });
});

describe('the key history', () => {
  it('opens the first key of a role from the start, and a later key at its load time, closing neither', async () => {
    // The test process's own key went in first (the app registers it on first use): it covers the past.
    const { keys } = await serviceTrust(db());
    const mine = keys.find((k) => k.keyId === serviceSigningKey().keyId)!;
    expect(mine.validFrom).toBe('1970-01-01T00:00:00.000Z');

    const loadedA = new Date(Date.now() - 60_000);
    const [rowA] = await registerSigningKeys(db(), [own(keyA, loadedA)]);
    expect(rowA!.valid_from.toISOString()).toBe(loadedA.toISOString());
    expect(rowA!.valid_until).toBeNull();
    // A second process with the same key, started later, keeps the earliest start; one started earlier
    // (its clock behind) moves it back.
    const [again] = await registerSigningKeys(db(), [own(keyA, new Date())]);
    expect(again!.valid_from.toISOString()).toBe(loadedA.toISOString());
    expect(again!.changed_at.toISOString()).toBe(rowA!.changed_at.toISOString());
    const earlier = new Date(loadedA.getTime() - 1000);
    const [moved] = await registerSigningKeys(db(), [own(keyA, earlier)]);
    expect(moved!.valid_from.toISOString()).toBe(earlier.toISOString());

    await registerSigningKeys(db(), [own(keyB)]);
    const rows = await listKeys(db());
    expect(rows.find((r) => r.key_id === keyA.keyId)!.valid_until).toBeNull();
    expect(rows.find((r) => r.key_id === keyB.keyId)!.valid_until).toBeNull();
    // A key gains a role it was started with; it never loses one.
    const [both] = await registerSigningKeys(db(), [own(keyB, new Date(), ['log'])]);
    expect(both!.roles.sort()).toEqual([...serviceRoles, 'log'].sort());
  });

  it('retires a key only while another current key signs each of its roles; a retired key is never reopened', async () => {
    const loneRole = signingKeyFromSeed(seed(0xd4));
    await registerSigningKeys(db(), [own(loneRole, new Date(), ['witness'])]);
    const before = await listKeys(db());
    await expect(retireKey(db(), loneRole.keyId)).rejects.toThrow(/no other current key signs witness/);
    expect(await listKeys(db())).toEqual(before);
    await expect(retireKey(db(), 'ffffffffffffffff')).rejects.toBeInstanceOf(KeyHistoryError);

    const at = Date.now();
    const retired = await retireKey(db(), keyA.keyId);
    // Its period ends once every process has stopped signing with it.
    const until = retired.valid_until!.getTime();
    expect(until).toBeGreaterThanOrEqual(at + RETIRE_GRACE_MS - 2000);
    expect(until).toBeLessThanOrEqual(Date.now() + RETIRE_GRACE_MS + 2000);
    await expect(retireKey(db(), keyA.keyId)).rejects.toThrow(/already retired/);
    const [still] = await registerSigningKeys(db(), [own(keyA, new Date(0))]);
    expect(still!.valid_until!.getTime()).toBe(until);
    expect(still!.valid_from.getTime()).toBe(retired.valid_from.getTime());
  });

  it('revokes from a past time only, and a second revocation only moves it earlier', async () => {
    await expect(revokeKey(db(), keyC.keyId, new Date(), 'x')).rejects.toThrow(/no key/);
    await registerSigningKeys(db(), [own(keyC)]);
    await expect(revokeKey(db(), keyC.keyId, new Date(Date.now() + 3_600_000), 'x')).rejects.toThrow(
      /future/,
    );
    await expect(revokeKey(db(), keyC.keyId, new Date(), '  ')).rejects.toThrow(/reason/);
    const t1 = new Date(Date.now() - 10_000);
    expect((await revokeKey(db(), keyC.keyId, t1, 'leaked')).revoked_from!.getTime()).toBe(t1.getTime());
    const later = await revokeKey(db(), keyC.keyId, new Date(), 'leaked again');
    expect(later.revoked_from!.getTime()).toBe(t1.getTime());
  });

  it('refuses to start a process with a retired or revoked key, in one line that names the fix', async () => {
    const failure = await watchSigningKeys(db()).then(
      () => null,
      (err: unknown) => err,
    );
    expect(failure).toBeNull(); // the test process's own key is current
    for (const key of [keyA, keyC]) {
      const rows = await registerSigningKeys(db(), [own(key)]);
      const { closedKeyFailure } = await import('../../shared/platform/key-history');
      const refused = closedKeyFailure({ variable: 'SERVICE_SIGNING_KEY' }, rows[0]!);
      expect(refused).toBeInstanceOf(StartupFailure);
      expect(refused.plain).toBe(true);
      expect(refused.what).not.toContain('\n');
      expect(refused.what).toMatch(
        key === keyA
          ? /^SERVICE_SIGNING_KEY is key [0-9a-f]{16}, which was retired/
          : /which is revoked from/,
      );
      expect(refused.what).toContain('set SERVICE_SIGNING_KEY to the new key');
    }
  });
});

describe('the trust root', () => {
  it('is built from the history, with the log under its origin, and answers 304 to its ETag', async () => {
    forgetServiceTrust(db());
    // Without SITE_URL the tile prefix is the request's own origin (and the answer is not stored).
    const get = () => app.request.get('/api/proof-workflows/trust-root').set('Host', 'verifier.example');
    const res = await get().expect(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const root = parseTrustRoot(res.body);
    expect(root.format).toBe('proof-exchange/trust-root/v1');
    expect(root.log.origin).toBe('localhost/log');
    expect(root.log.tiles).toBe('http://verifier.example/log/');
    const byId = new Map(root.keys.map((k) => [k.keyId, k]));
    expect(byId.get(keyA.keyId)).toMatchObject({ roles: ['attestation', 'license', 'package', 'receipt'] });
    expect(byId.get(keyA.keyId)!.validUntil).toBeDefined();
    expect(byId.get(keyC.keyId)!.revokedFrom).toBeDefined();
    const logKey = root.keys.find((k) => k.vkey === root.log.vkey)!;
    expect(logKey.roles).toEqual(['log']);
    expect(root.log.vkey).toBe(logVkey('localhost/log', logKey.publicKey));
    // Without LOG_WITNESSES: every log key not revoked, and no quorum of witnesses.
    expect(root.policy).toContain(`log ${root.log.vkey} ${root.log.tiles}\n`);
    expect(root.policy).toMatch(/quorum none\n$/);
    expect(root.witnesses).toEqual([]);
    const etag = res.headers.etag as string;
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
    await get().set('If-None-Match', etag).expect(304);
    // The document changes with the history, and so does its ETag.
    await registerSigningKeys(db(), [own(signingKeyFromSeed(seed(0xe5)))]);
    forgetServiceTrust(db());
    const next = await get().set('If-None-Match', etag).expect(200);
    expect(next.headers.etag).not.toBe(etag);
    expect(Date.parse(next.body.issuedAt)).toBeGreaterThan(Date.parse(root.issuedAt));
  });

  it('refuses a document that lies about its keys', () => {
    const good: TrustRoot = {
      format: 'proof-exchange/trust-root/v1',
      issuedAt: '2026-01-01T00:00:00.000Z',
      log: {
        origin: 'example.com/log',
        vkey: logVkey('example.com/log', keyB.publicKey),
        tiles: 'https://example.com/log/',
      },
      keys: [
        {
          keyId: keyA.keyId,
          publicKey: keyA.publicKey,
          roles: ['package'],
          validFrom: '2026-01-01T00:00:00.000Z',
        },
        {
          keyId: keyB.keyId,
          publicKey: keyB.publicKey,
          roles: ['log'],
          validFrom: '2026-01-01T00:00:00.000Z',
          vkey: logVkey('example.com/log', keyB.publicKey),
        },
      ],
      witnesses: [],
      policy: 'quorum none\n',
    };
    expect(parseTrustRoot(JSON.stringify(good)).keys).toHaveLength(2);
    const withKey = (k: Partial<TrustKey>) => ({
      ...good,
      keys: [{ ...good.keys[0]!, ...k }, good.keys[1]!],
    });
    expect(() => parseTrustRoot(withKey({ keyId: keyC.keyId }))).toThrow(/not the id of its public key/);
    expect(() => parseTrustRoot(withKey({ validUntil: '2025-01-01T00:00:00.000Z' }))).toThrow(
      /valid until before/,
    );
    expect(() => parseTrustRoot(withKey({ roles: ['package', 'package'] }))).toThrow(/each role once/);
    expect(() => parseTrustRoot(withKey({ vkey: logVkey('other.example/log', keyA.publicKey) }))).toThrow(
      /vkey/,
    );
    expect(() => parseTrustRoot({ ...good, keys: [good.keys[0]!, good.keys[0]!] })).toThrow(/listed twice/);
    expect(() =>
      parseTrustRoot({ ...good, log: { ...good.log, vkey: logVkey('example.com/log', keyA.publicKey) } }),
    ).toThrow(/log.vkey/);
    expect(() => parseTrustRoot({ ...good, format: 'proof-exchange/trust-root/v2' })).toThrow(
      /not a trust root/,
    );
  });
});

describe('licenses under the key history', () => {
  /** A stored license whose token the given key signed, as issueLicense stores one. */
  async function licenseSignedBy(key: SigningKey, issuedAt: Date) {
    const { signLicense } = await import('../../shared/licensing/license-token');
    const { licenseTokenHash } = await import('../../shared/licensing/licenses');
    const { newId } = await import('../../shared/platform/ids');
    const organization = `Org ${Math.random().toString(36).slice(2)}`;
    const checkoutId = newId('chk');
    const licenseId = newId('lic');
    const expiresAt = new Date(issuedAt.getTime() + 30 * 86_400_000);
    const token = signLicense(
      {
        licenseId,
        checkoutId,
        tier: 'Business',
        organization,
        periodDays: 30,
        issuedAt: issuedAt.toISOString(),
        expiresAt: expiresAt.toISOString(),
        nonce: Math.random().toString(36).slice(2),
      },
      key,
    );
    await db().transaction(async (trx) => {
      await trx('checkouts').insert({
        id: checkoutId,
        license_type: 'Business',
        organization,
        organization_key: organization.toLowerCase(),
        email: 'licensee@example.test',
        usd_cents: 0,
        status: 'confirmed',
        settlement: 'exact',
        settled_at: issuedAt,
        created_at: issuedAt,
        updated_at: issuedAt,
      });
      await trx('licenses').insert({
        id: licenseId,
        checkout_id: checkoutId,
        tier: 'Business',
        organization,
        organization_key: organization.toLowerCase(),
        period_days: 30,
        token_hash: licenseTokenHash(token),
        key_id: key.keyId,
        issued_at: issuedAt,
        expires_at: expiresAt,
        credit_usd_cents: 0,
      });
    });
    return { Authorization: `Bearer ${token}` };
  }

  it("accepts a license of an earlier key; one issued after its key's revocation is license_key_revoked", async () => {
    const licensing = signingKeyFromSeed(seed(0x77));
    await registerSigningKeys(db(), [own(licensing, new Date(Date.now() - 3_600_000))]);
    const early = await licenseSignedBy(licensing, new Date(Date.now() - 1_800_000));
    const late = await licenseSignedBy(licensing, new Date(Date.now() - 60_000));
    forgetServiceTrust(db());
    // Not the process's own key, and no longer the newest: both still work.
    await app.request.get('/api/v1/commercial/license').set(early).expect(200);
    await app.request.get('/api/v1/commercial/license').set(late).expect(200);
    // A key no history lists signs nothing the service accepts.
    const stranger = await licenseSignedBy(signingKeyFromSeed(seed(0x78)), new Date());
    expect((await app.request.get('/api/v1/commercial/license').set(stranger)).status).toBe(401);

    await revokeKey(db(), licensing.keyId, new Date(Date.now() - 600_000), 'test: compromised');
    forgetServiceTrust(db());
    await app.request.get('/api/v1/commercial/license').set(early).expect(200);
    const refused = await app.request.get('/api/v1/commercial/license').set(late);
    expect(refused.status).toBe(401);
    expect(refused.body.code).toBe('license_key_revoked');
  });
});

describe('a process whose key the history closed', () => {
  it('refuses to sign: a request answers 503 with Retry-After and writes nothing', async () => {
    const mine = serviceSigningKey();
    setKeyRefusal(mine.keyId, 'was retired');
    try {
      expect(() => mine.sign('x')).toThrow(SigningKeyRetired);
      const counts = async () =>
        Promise.all(
          ['checkouts', 'licenses', 'trial_claims'].map(async (t) =>
            Number((await db()(t).count({ n: '*' }))[0]!.n),
          ),
        );
      const before = await counts();
      const res = await app.request.post('/api/v1/commercial/checkout/prepare').send({
        license: 'TRIAL',
        organization: 'Refused Org',
        email: 'r@example.test',
        ...(await trialProof(app.request)),
      });
      expect(res.status, JSON.stringify(res.body)).toBe(503);
      expect(res.body.code).toBe('signing_key_retired');
      expect(res.headers['retry-after']).toBe('5');
      expect(await counts()).toEqual(before);
    } finally {
      setKeyRefusal(mine.keyId, null);
    }
  });

  it('learns of its retirement while it runs and stops signing within a few seconds', async () => {
    // Another current key with the same roles first, as the rotation procedure has it.
    await registerSigningKeys(db(), [own(signingKeyFromSeed(seed(0xf6)))]);
    const watch = await watchSigningKeys(db());
    const mine = serviceSigningKey();
    try {
      expect(() => mine.sign('still mine')).not.toThrow();
      await retireKey(db(), mine.keyId);
      const started = Date.now();
      await expect
        .poll(
          () => {
            try {
              mine.sign('x');
              return 'signed';
            } catch (err) {
              return (err as Error).name;
            }
          },
          { timeout: 8000, interval: 100 },
        )
        .toBe('SigningKeyRetired');
      expect(Date.now() - started).toBeLessThan(RETIRE_GRACE_MS);
    } finally {
      watch.stop();
      setKeyRefusal(mine.keyId, null);
    }
  });
});

describe('the keys derived from the signing key', () => {
  it('prints, for each one whose variable is unset, the value that derives the same key when set', async () => {
    const { derivedSettings } = await import('../../cli/keys');
    const { derivedKeyPurposes, purposeKey, secretsKey } = await import('../../shared/platform/sealing');
    const settings = derivedSettings();
    expect(settings.map((l) => l.split('=')[0])).toEqual(['SEALING_KEY', 'BALLOT_KEY', 'PROOF_INPUT_KEY']);
    for (const line of settings) {
      const [name, value] = line.split('=') as [keyof typeof derivedKeyPurposes, string];
      expect(value).toMatch(/^[0-9a-f]{128}$/);
      // Set as the variable, the printed value derives the key the signing key derived: what was
      // sealed under it still opens after the signing key changes.
      expect(purposeKey(derivedKeyPurposes[name], { name, value })).toEqual(
        purposeKey(derivedKeyPurposes[name]),
      );
    }
    const sealingValue = settings[0]!.split('=')[1]!;
    expect(purposeKey('secrets-at-rest', { name: 'SEALING_KEY', value: sealingValue })).toEqual(secretsKey());
    expect(() => purposeKey('secrets-at-rest', { name: 'SEALING_KEY', value: 'ab'.repeat(40) })).toThrow(
      /expected 32 bytes/,
    );
  });
});

describe('a key from before the history', () => {
  it('is recorded with its closed period by npm run keys -- import, and what it signed then verifies', async () => {
    const { buildWorkflowPackage } = await import('../../shared/workflows/package');
    const { findTemplate } = await import('../../shared/workflows/templates');
    const { completeWorkflow } = await import('../workflows/helpers');
    const { importKey } = await import('../../shared/platform/key-history');
    const template = findTemplate('Vendor Onboarding')!;
    const old = signingKeyFromSeed(seed(0x55));
    const proofId = 'prf_01jd3oldkeypackage000000000';
    const signed = (issuedAt: string) =>
      buildWorkflowPackage(
        { template, proofId, stages: completeWorkflow(template, proofId).stages, issuedAt },
        old,
      );
    const verify = async (pkg: unknown) =>
      (await app.request.post('/api/proof-workflows/verify').send({ package: pkg }).expect(200)).body;
    const inPeriod = signed('2025-06-01T00:00:00.000Z');
    // The case: a key changed before there was a history names a key no one knows.
    expect((await verify(inPeriod)).reasons[0]).toMatchObject({
      check: 'signatureValid',
      code: 'unknown_key',
    });

    const cli = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        'cli/keys.ts',
        'import',
        old.publicKey,
        '--from',
        '2025-01-01T00:00:00Z',
        '--until',
        '2025-12-01T00:00:00Z',
      ],
      { env: { ...process.env, VITEST: '' }, encoding: 'utf8' },
    );
    expect(cli.status, cli.stderr).toBe(0);
    expect(cli.stdout).toMatch(new RegExp(`^imported: ${old.keyId} `));
    forgetServiceTrust(db());
    expect(await verify(inPeriod)).toMatchObject({ signatureValid: true, notAltered: true, completed: true });
    const outside = await verify(signed('2026-01-01T00:00:00.000Z'));
    expect(outside.reasons[0]).toMatchObject({ check: 'signatureValid', code: 'expired' });
    // It signs nothing more: a process started with it would not start.
    const rows = await registerSigningKeys(db(), [own(old)]);
    expect(rows[0]!.valid_until!.toISOString()).toBe('2025-12-01T00:00:00.000Z');

    const before = await listKeys(db());
    const at = { from: new Date('2025-01-01T00:00:00Z'), until: new Date('2025-02-01T00:00:00Z') };
    const roles = serviceRoles;
    await expect(importKey(db(), { publicKey: old.publicKey, roles, ...at })).rejects.toThrow(/already/);
    const fresh = signingKeyFromSeed(seed(0x56)).publicKey;
    await expect(
      importKey(db(), { publicKey: fresh, roles, from: at.until, until: at.from }),
    ).rejects.toThrow(/before --until/);
    await expect(
      importKey(db(), { publicKey: fresh, roles, from: at.from, until: new Date(Date.now() + 60_000) }),
    ).rejects.toThrow(/future/);
    await expect(importKey(db(), { publicKey: 'not-a-key', roles, ...at })).rejects.toThrow(/not a key/);
    await expect(
      importKey(db(), { publicKey: fresh, roles: ['package', 'root' as never], ...at }),
    ).rejects.toThrow(/not a key/);
    expect(await listKeys(db())).toEqual(before);
  });
});

describe('a current key imported by npm run keys -- import', () => {
  it('is current from the time given, gains the roles it lacked, and a closed key is never current again', async () => {
    const { importCurrentKey, retireKey } = await import('../../shared/platform/key-history');
    const fresh = signingKeyFromSeed(seed(0x61));
    const keysCli = (...args: string[]) =>
      spawnSync(process.execPath, ['--import', 'tsx', 'cli/keys.ts', ...args], {
        env: {
          ...process.env,
          VITEST: '',
          SERVICE_SIGNING_KEY: seed(0x64).toString('hex'),
          LOG_SIGNING_KEY: seed(0x61).toString('hex'),
        },
        encoding: 'utf8',
      });
    // `own` says which of its settings' keys the history lacks, and the command that imports each.
    const own = keysCli('own');
    expect(own.status, own.stderr).toBe(0);
    const ownLines = own.stdout.trimEnd().split('\n');
    expect(ownLines).toEqual([
      expect.stringMatching(
        /^SERVICE_SIGNING_KEY {2}[0-9a-f]{16} {2}is not in the trust root: npm run keys -- import \S+ --from now --roles attestation,license,package,receipt$/,
      ),
      `LOG_SIGNING_KEY  ${fresh.keyId}  is not in the trust root: npm run keys -- import ${fresh.publicKey} --from now --roles log`,
    ]);
    const cli = keysCli(...ownLines[1]!.split('npm run keys -- ')[1]!.split(' '));
    expect(cli.status, cli.stderr).toBe(0);
    expect(cli.stdout).toMatch(new RegExp(`^imported: ${fresh.keyId}  log .* current`));
    const [row] = (await listKeys(db())).filter((r) => r.key_id === fresh.keyId);
    expect(row).toMatchObject({ roles: ['log'], valid_until: null, revoked_from: null });
    expect(Math.abs(row!.valid_from.getTime() - Date.now())).toBeLessThan(60_000);
    // Again: nothing changes; with a role it lacked, it gains it and keeps its period.
    const again = await importCurrentKey(db(), {
      publicKey: fresh.publicKey,
      roles: ['log'],
      from: new Date(),
    });
    expect(again.added).toBe(false);
    const more = await importCurrentKey(db(), {
      publicKey: fresh.publicKey,
      roles: ['log', 'package'],
      from: new Date(),
    });
    expect(more).toMatchObject({ added: true, row: { roles: ['log', 'package'] } });
    expect(more.row.valid_from).toEqual(row!.valid_from);
    // A retired key is not made current again, nor a key from the future, nor what is not a key.
    const other = signingKeyFromSeed(seed(0x62));
    await importCurrentKey(db(), { publicKey: other.publicKey, roles: ['log', 'package'], from: new Date() });
    await retireKey(db(), fresh.keyId);
    const before = await listKeys(db());
    await expect(
      importCurrentKey(db(), { publicKey: fresh.publicKey, roles: ['log'], from: new Date() }),
    ).rejects.toThrow(/never current again/);
    await expect(
      importCurrentKey(db(), {
        publicKey: signingKeyFromSeed(seed(0x63)).publicKey,
        roles: ['log'],
        from: new Date(Date.now() + 3_600_000),
      }),
    ).rejects.toThrow(/future/);
    await expect(
      importCurrentKey(db(), { publicKey: 'not-a-key', roles: ['log'], from: new Date() }),
    ).rejects.toThrow(/not a key/);
    expect(await listKeys(db())).toEqual(before);
  });
});

describe('the trust root behind a configured address', () => {
  it('names the configured tile prefix and may be cached a minute', async () => {
    const site = testApp({
      urls: { base: 'https://api.example', api: 'https://api.example', site: 'https://proofs.example' },
    });
    try {
      const res = await site.request.get('/api/proof-workflows/trust-root').expect(200);
      expect(res.body.log.tiles).toBe('https://proofs.example/log/');
      expect(res.headers['cache-control']).toBe('public, max-age=60');
    } finally {
      await site.close();
    }
  });
});
