// The service catalog: what an agent can buy, each with its input schema, price and the code that runs it.
import { z } from 'zod';
import type { Db } from '../platform/db/knex';
import { signTimestamp } from './attest';
import { attestBatchService } from './services/attest-batch';
import { blindPolicyService } from './services/blind-policy';

export interface RunContext {
  jobId: string;
  attempt: number;
  /** Reports progress (0–100) and the current stage; cheap to call often. */
  progress(percent: number, stage?: string): Promise<void>;
}

export interface ServiceDefinition<I = unknown> {
  id: string;
  name: string;
  description: string;
  /** Price in USD cents; 0 is free and runs at once. */
  priceUsdCents: number;
  expectedDurationMs: number;
  input: z.ZodType<I>;
  /** Inputs the service accepts, shown to agents (the A2A card's skill examples); a test validates each. */
  examples?: Array<Record<string, unknown>>;
  run(input: I, ctx: RunContext): Promise<unknown>;
}

const sha256Hex = z
  .string()
  .regex(/^[0-9a-fA-F]{64}$/, 'a SHA-256 digest: 64 hex characters')
  .transform((s) => s.toLowerCase());

function defineService<I>(def: ServiceDefinition<I>): ServiceDefinition<I> {
  return def;
}

const attestTimestamp = defineService({
  id: 'attest.timestamp',
  name: 'Timestamp attestation',
  description:
    'Signs a SHA-256 digest with the time it was seen, with the service key (ed25519). Verifiable offline with the public key published by /api/health and /api/services.',
  priceUsdCents: 0,
  expectedDurationMs: 50,
  input: z.strictObject({ digest: sha256Hex }),
  // sha256 of the empty string
  examples: [{ digest: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' }],
  run: async (input, ctx) => signTimestamp(input.digest, ctx.jobId),
});

/** The catalog, listed here: a new service is one more entry (its code in services/). */
const services: readonly ServiceDefinition[] = [
  attestTimestamp as ServiceDefinition,
  defineService(attestBatchService) as ServiceDefinition,
  defineService(blindPolicyService) as ServiceDefinition,
];

export function listServices(): readonly ServiceDefinition[] {
  return services;
}

export function findService(id: string): ServiceDefinition | undefined {
  return services.find((s) => s.id === id);
}

/** Makes the services table match the code catalog (run at release and start-up; idempotent). */
export async function syncServiceCatalog(db: Db): Promise<void> {
  const rows = services.map((s) => ({
    id: s.id,
    name: s.name,
    description: s.description,
    price_usd_cents: s.priceUsdCents,
    input_schema: JSON.stringify(z.toJSONSchema(s.input, { io: 'input', unrepresentable: 'any' })),
    expected_duration_ms: s.expectedDurationMs,
    active: true,
    updated_at: db.fn.now(),
  }));
  await db.transaction(async (trx) => {
    await trx('services').insert(rows).onConflict('id').merge();
    await trx('services')
      .whereNotIn(
        'id',
        rows.map((r) => r.id),
      )
      .update({ active: false });
  });
}
