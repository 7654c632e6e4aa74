// The trust root a verifier pins (proof-exchange/trust-root/v1): the log, every key the service has
// signed with — its roles, when it was valid, when it was revoked — the witnesses and their policy, and
// the credential issuers its organizations accept, with their periods and revocations.
// Pure and offline: parse a document, then ask which key an item's signature may be checked with.
import { z } from 'zod';
import { keyIdOf, verifyEd25519 } from './crypto';
import { SIG_ED25519, formatVkey } from './translog/note';

export const TRUST_ROOT_FORMAT = 'proof-exchange/trust-root/v1';

/** What a key may sign: packages (and the JSON tree heads in them), receipts, licenses, attestations, checkpoints. */
export const trustRoles = ['package', 'receipt', 'license', 'attestation', 'log', 'witness'] as const;
export type TrustRole = (typeof trustRoles)[number];

/** Why an item's key is not one to check it with. */
export const keyProblems = ['unknown_key', 'wrong_role', 'not_yet_valid', 'expired', 'revoked'] as const;
export type KeyProblem = (typeof keyProblems)[number];

const time = z.iso.datetime();
const keyId = z
  .string()
  .regex(/^[0-9a-f]{16}$/, 'the first 16 hex characters of the sha256 of the public key');
const rawKey = z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'a raw ed25519 public key, base64url');

/** One key of a trust root (the shape alone; parseTrustRoot checks the id against the key). */
export const trustKeyShape = z.object({
  keyId,
  publicKey: rawKey,
  roles: z
    .array(z.enum(trustRoles))
    .min(1)
    .max(trustRoles.length)
    .refine((r) => new Set(r).size === r.length, 'each role once'),
  validFrom: time,
  validUntil: time.optional(),
  revokedFrom: time.optional(),
  /** A log key in signed-note form, under the log's origin. */
  vkey: z.string().max(200).optional(),
});
export type TrustKey = z.infer<typeof trustKeyShape>;

/** A field element of BN254, in decimal (an issuer's BabyJubjub key coordinates). */
const fieldDecimal = z.string().regex(/^[0-9]{1,78}$/, 'a field element in decimal');

/**
 * A credential issuer an organization of this service accepts (docs/credentials.md): its BabyJubjub
 * key, the organization (`operator` or a license id), the schema ids it may sign there, its period and
 * its revocation from a time, as the latest logged statement (at `leafIndex`) says.
 */
export const trustIssuerShape = z.object({
  keyId: z.string().regex(/^[0-9a-f]{64}$/, 'an issuer key id: 64 lowercase hex'),
  name: z.string().max(200),
  publicKey: z.tuple([fieldDecimal, fieldDecimal]),
  acceptedBy: z.string().max(100),
  schemas: z.array(z.string().max(100)).max(100),
  validFrom: time,
  validUntil: time.optional(),
  revokedFrom: time.optional(),
  version: z.number().int().min(1),
  leafIndex: z.number().int().min(0),
  /**
   * Every revocation root the issuer published, oldest first, as the log recorded them: a verifier
   * checks offline that no newer root than a proof's had been published by the proof's time.
   */
  revocationRoots: z
    .array(z.object({ seq: z.number().int().min(0), root: fieldDecimal, publishedAt: time }))
    .max(100_000)
    .optional(),
});
export type TrustIssuer = z.infer<typeof trustIssuerShape>;

export const trustRootSchema = z
  .object({
    format: z.literal(TRUST_ROOT_FORMAT),
    issuedAt: time,
    log: z.object({
      origin: z.string().min(1).max(200),
      /** The log key checkpoints are signed with now, in signed-note form. */
      vkey: z.string().max(200).nullable(),
      /** The tile prefix (c2sp.org/tlog-tiles), ending in `/`. */
      tiles: z.string().max(500),
    }),
    keys: z.array(trustKeyShape).max(1000),
    witnesses: z
      .array(
        z.object({
          name: z.string().max(200),
          vkey: z.string().max(200),
          url: z.string().max(500).optional(),
        }),
      )
      .max(100),
    /** The verifier's policy (c2sp.org/tlog-policy): the log's keys, the witnesses, the quorum. */
    policy: z.string().max(20_000),
    /** The credential issuers its organizations accept (absent from trust roots made before them). */
    issuers: z.array(trustIssuerShape).max(10_000).optional(),
  })
  .meta({ id: 'TrustRoot' });
export type TrustRoot = z.infer<typeof trustRootSchema>;

/**
 * Parses a trust root (a JSON value or its text). Throws with the first problem: a malformed
 * document, a key listed twice, a key id that is not its key's, a period that ends before it begins,
 * a log vkey that is not the key under the log's origin.
 */
export function parseTrustRoot(json: unknown): TrustRoot {
  const value: unknown = typeof json === 'string' ? JSON.parse(json) : json;
  const parsed = trustRootSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`not a trust root: ${issue?.path.join('.') || 'document'}: ${issue?.message}`);
  }
  const root = parsed.data;
  const seen = new Set<string>();
  for (const k of root.keys) {
    if (seen.has(k.keyId)) throw new Error(`not a trust root: key ${k.keyId} is listed twice`);
    seen.add(k.keyId);
    if (keyIdOf(k.publicKey) !== k.keyId)
      throw new Error(`not a trust root: key ${k.keyId} is not the id of its public key`);
    if (k.validUntil && Date.parse(k.validUntil) < Date.parse(k.validFrom))
      throw new Error(`not a trust root: key ${k.keyId} is valid until before it is valid from`);
    if (k.vkey !== undefined && k.vkey !== logVkey(root.log.origin, k.publicKey))
      throw new Error(`not a trust root: key ${k.keyId} has a vkey that is not its key under the log origin`);
  }
  const accepted = new Set<string>();
  for (const i of root.issuers ?? []) {
    const at = `${i.acceptedBy} ${i.keyId}`;
    if (accepted.has(at))
      throw new Error(`not a trust root: issuer ${i.keyId} is listed twice for ${i.acceptedBy}`);
    accepted.add(at);
  }
  if (root.log.vkey !== null && !root.keys.some((k) => k.roles.includes('log') && k.vkey === root.log.vkey))
    throw new Error('not a trust root: log.vkey is none of the listed log keys');
  return root;
}

/** A log key in signed-note form: an Ed25519 key named by the log's origin. */
export const logVkey = (origin: string, publicKey: string): string =>
  formatVkey(origin, SIG_ED25519, Buffer.from(publicKey, 'base64url'));

type When = string | number | Date;
const ms = (t: When): number => (t instanceof Date ? t.getTime() : typeof t === 'number' ? t : Date.parse(t));

export type KeyVerdict = { ok: true; key: TrustKey } | { ok: false; reason: KeyProblem; detail: string };

/**
 * The key an item's signature is to be checked with. `signedAt` is the time the item says it was
 * signed (its issuedAt, time or timestamp; undefined for an item that carries none: then only the
 * role and revocation are checked); `loggedAt` the time the item is known to have been logged (a
 * cosigned checkpoint's time, or the service's own log), which alone can hold against a revocation —
 * a signer holding a compromised key writes any signedAt it likes.
 */
export function keyFor(
  root: Pick<TrustRoot, 'keys'>,
  keyId: string,
  role: TrustRole,
  signedAt: When | undefined,
  loggedAt?: When,
): KeyVerdict {
  const key = root.keys.find((k) => k.keyId === keyId);
  if (!key) return { ok: false, reason: 'unknown_key', detail: `The trust root lists no key ${keyId}.` };
  if (!key.roles.includes(role))
    return { ok: false, reason: 'wrong_role', detail: `Key ${keyId} does not sign ${role} items.` };
  const signed = signedAt === undefined ? undefined : ms(signedAt);
  if (signed !== undefined && Number.isNaN(signed))
    return { ok: false, reason: 'not_yet_valid', detail: 'The item names no time it was signed.' };
  if (key.revokedFrom !== undefined) {
    const from = Date.parse(key.revokedFrom);
    const logged = loggedAt === undefined ? NaN : ms(loggedAt);
    if (Number.isNaN(logged) || logged >= from || (signed !== undefined && signed >= from))
      return {
        ok: false,
        reason: 'revoked',
        detail: `Key ${keyId} is revoked from ${key.revokedFrom}${
          Number.isNaN(logged) ? ', and nothing shows this item was logged before' : ''
        }.`,
      };
  }
  if (signed !== undefined && signed < Date.parse(key.validFrom))
    return {
      ok: false,
      reason: 'not_yet_valid',
      detail: `Key ${keyId} is valid from ${key.validFrom}; the item says it was signed before.`,
    };
  if (signed !== undefined && key.validUntil !== undefined && signed >= Date.parse(key.validUntil))
    return {
      ok: false,
      reason: 'expired',
      detail: `Key ${keyId} was valid until ${key.validUntil}; the item says it was signed after.`,
    };
  return { ok: true, key };
}

export type SignatureVerdict =
  { ok: true; key: TrustKey } | { ok: false; reason: KeyProblem | 'bad_signature'; detail: string };

/** keyFor, then the ed25519 signature (base64url) over `message` under the key it found. Never throws. */
export function verifySignedBy(
  root: Pick<TrustRoot, 'keys'>,
  item: { keyId: string; role: TrustRole; signedAt: When | undefined; loggedAt?: When | undefined },
  message: string | Uint8Array,
  signature: string,
): SignatureVerdict {
  const found = keyFor(root, item.keyId, item.role, item.signedAt, item.loggedAt);
  if (!found.ok) return found;
  if (!verifyEd25519(found.key.publicKey, message, signature))
    return { ok: false, reason: 'bad_signature', detail: 'The signature does not match the item.' };
  return found;
}

/**
 * What a verifier may be given: a trust root, or (as before there was one) the service's bare public
 * key (raw ed25519, base64url) and, apart, the key its tree heads are signed with — read as a root
 * listing them with no period.
 */
export type Trust =
  Pick<TrustRoot, 'keys'> | { publicKey: string; logPublicKey?: string | undefined } | string;

const EPOCH = new Date(0).toISOString();
const serviceRoles: TrustRole[] = ['package', 'receipt', 'license', 'attestation'];

export function asTrust(given: Trust): Pick<TrustRoot, 'keys'> {
  if (typeof given !== 'string' && 'keys' in given) return given;
  const trust = typeof given === 'string' ? { publicKey: given } : given;
  const keys: TrustKey[] = [];
  const add = (publicKey: string, roles: TrustRole[]) => {
    if (!rawKey.safeParse(publicKey).success) return; // a malformed key verifies nothing
    const id = keyIdOf(publicKey);
    const known = keys.find((k) => k.keyId === id);
    if (known) known.roles = [...new Set([...known.roles, ...roles])];
    else keys.push({ keyId: id, publicKey, roles, validFrom: EPOCH });
  };
  add(trust.publicKey, trust.logPublicKey ? serviceRoles : [...serviceRoles, 'log']);
  if (trust.logPublicKey) add(trust.logPublicKey, ['log']);
  return { keys };
}
