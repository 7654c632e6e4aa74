// The process logger: pino JSON lines; secrets, tokens and private inputs are redacted by path.
import { pino } from 'pino';
import type { Logger } from 'pino';
import { env } from './env';

export const redactPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["idempotency-key"]',
  'req.headers["payment-signature"]',
  'req.headers["x-payment"]',
  'res.headers["set-cookie"]',
  '*.apiKey',
  '*.api_key',
  '*.token',
  '*.password',
  '*.secret',
  '*.privateInputs',
  '*.inputs',
  '*.salt',
  '*.ballot',
  '*.txKey',
];

export const logger: Logger = pino({
  level: env.LOG_LEVEL,
  base: { service: 'proof-exchange' },
  redact: { paths: redactPaths, censor: '[redacted]' },
  timestamp: pino.stdTimeFunctions.isoTime,
});

export type { Logger };

/** What a background loop tells its log about its rounds. */
export interface RoundLog {
  /** A round failed: logged at warn when it is the first of a run of failures, else only counted. */
  failed(err: Error, fields?: Record<string, unknown>): void;
  /** A round succeeded: after failures, one info line with how many failed and for how long. */
  succeeded(): void;
}

/**
 * A loop's failures as one story, not a line a round: a loop that runs every few hundred milliseconds
 * through a Postgres or Redis outage logs its first failure (with why, no stack) and its recovery.
 */
export function roundLog(what: string, log: Logger = logger): RoundLog {
  let since: number | undefined;
  let failures = 0;
  return {
    failed(err, fields = {}) {
      failures++;
      if (since !== undefined) return;
      since = Date.now();
      log.warn({ ...fields, err: err.message }, `${what} failed; retrying, quietly until it succeeds`);
    },
    succeeded() {
      if (since === undefined) return;
      log.info({ failedRounds: failures, durationMs: Date.now() - since }, `${what} succeeds again`);
      since = undefined;
      failures = 0;
    },
  };
}
