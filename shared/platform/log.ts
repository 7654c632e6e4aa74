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
