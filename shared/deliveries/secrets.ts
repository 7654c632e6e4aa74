// The secrets deliveries are signed and sent with, sealed at rest under the sealing key: a job webhook's
// HMAC secret, what an A2A push receiver asked to get back (its token and Authorization credentials),
// and the HMAC secret of a delivery requested with requestLogistics. Each ciphertext opens only in its
// own row and column; only the deliveries worker opens them, just before a POST, and never logs them.
import type { Knex } from 'knex';
import type { Db } from '../platform/db/knex';
import type { SealedColumn } from '../platform/sealed-columns';
import { openSecret, sealSecret, secretPlaceAad } from '../platform/sealing';
import type { SecretPlace } from '../platform/sealing';

type Conn = Db | Knex.Transaction;

const subscription = (jobId: string, column: string): SecretPlace => ({
  table: 'job_webhooks',
  id: jobId,
  column,
});

/** The sealed columns of a subscription (`job_webhooks`), for its insert. */
export function sealSubscriptionSecrets(
  jobId: string,
  secrets: { secret?: string | undefined; token?: string | undefined; credentials?: string | undefined },
): { secret_sealed: Buffer | null; token_sealed: Buffer | null; auth_credentials_sealed: Buffer | null } {
  const sealed = (column: string, plain: string | undefined) =>
    plain ? sealSecret(subscription(jobId, column), plain) : null;
  return {
    secret_sealed: sealed('secret_sealed', secrets.secret),
    token_sealed: sealed('token_sealed', secrets.token),
    auth_credentials_sealed: sealed('auth_credentials_sealed', secrets.credentials),
  };
}

const ownSecret = (requestId: string): SecretPlace => ({
  table: 'logistics_requests',
  id: requestId,
  column: 'webhook_secret_sealed',
});

/** A requestLogistics delivery's own HMAC secret, sealed to its row. */
export const sealDeliverySecret = (requestId: string, secret: string): Buffer =>
  sealSecret(ownSecret(requestId), secret);

/** What one POST is signed and sent with. */
export interface DeliveryKeys {
  /** The HMAC-SHA256 key of `X-Delivery-Signature` (none: only the ed25519 signature). */
  hmacKey: string | null;
  /** Headers the receiver asked to get back (A2A: `X-A2A-Notification-Token`, `Authorization`). */
  headers: Record<string, string>;
}

interface SubscriptionSecrets {
  url: string;
  format: 'event' | 'a2a';
  secret_sealed: Buffer | null;
  token_sealed: Buffer | null;
  auth_scheme: string | null;
  auth_credentials_sealed: Buffer | null;
}

/**
 * The deliveries worker, just before a POST. A subscription's delivery (a job webhook's event, an A2A
 * push) is sent with its subscription's secrets as they are now, and only to the subscription's own
 * URL; a delivery whose subscription is gone or was replaced gets a reason instead, and is not sent.
 */
export async function deliveryKeys(
  db: Conn,
  row: {
    id: string;
    job_id: string;
    method: string;
    target_url: string | null;
    event?: unknown;
    webhook_secret_sealed: Buffer | null;
  },
): Promise<DeliveryKeys | { refused: string }> {
  if (row.method !== 'a2a_push' && !row.event) {
    return {
      hmacKey: row.webhook_secret_sealed ? openSecret(ownSecret(row.id), row.webhook_secret_sealed) : null,
      headers: {},
    };
  }
  const a2a = row.method === 'a2a_push';
  const sub = (await db('job_webhooks')
    .where({ job_id: row.job_id, format: a2a ? 'a2a' : 'event' })
    .first('url', 'format', 'secret_sealed', 'token_sealed', 'auth_scheme', 'auth_credentials_sealed')) as
    SubscriptionSecrets | undefined;
  const what = a2a ? 'push notification config' : 'webhook subscription';
  if (!sub) return { refused: `The ${what} was deleted.` };
  if (sub.url !== row.target_url) return { refused: `The ${what} was replaced.` };
  const open = (column: keyof SubscriptionSecrets) => {
    const sealed = sub[column] as Buffer | null;
    return sealed ? openSecret(subscription(row.job_id, column), sealed) : null;
  };
  if (!a2a) return { hmacKey: open('secret_sealed'), headers: {} };
  const token = open('token_sealed');
  const authorization = sub.auth_scheme
    ? `${sub.auth_scheme} ${open('auth_credentials_sealed') ?? ''}`.trim()
    : null;
  return {
    // An A2A push is keyed with the receiver's own token (docs/exchange.md).
    hmacKey: token,
    headers: {
      ...(authorization ? { Authorization: authorization } : {}),
      ...(token ? { 'X-A2A-Notification-Token': token } : {}),
    },
  };
}

/** What SEALING_KEY seals here, for `release`'s re-seal and report. */
export const deliverySealedColumns: readonly SealedColumn[] = [
  ...(['secret_sealed', 'token_sealed', 'auth_credentials_sealed'] as const).map((column): SealedColumn => ({
    table: 'job_webhooks',
    column,
    ring: 'SEALING_KEY',
    idColumn: 'job_id',
    aad: (row) => secretPlaceAad(subscription(row.id, column)),
  })),
  {
    table: 'logistics_requests',
    column: 'webhook_secret_sealed',
    ring: 'SEALING_KEY',
    aad: (row) => secretPlaceAad(ownSecret(row.id)),
  },
];
