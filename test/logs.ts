// Every log line the process logger writes, at the most verbose level, until stop(): how the privacy and
// leakage tests see what an operator's logs would hold.
import { pino } from 'pino';
import type { Logger } from 'pino';

export function captureLogs(logger: Logger): { lines: string[]; stop(): void } {
  const stream = (logger as unknown as Record<symbol, { write(s: string): unknown }>)[
    pino.symbols.streamSym
  ]!;
  const original = stream.write;
  const previousLevel = logger.level;
  const lines: string[] = [];
  stream.write = (s: string) => {
    lines.push(s);
    return true;
  };
  logger.level = 'trace';
  return {
    lines,
    stop() {
      stream.write = original;
      logger.level = previousLevel;
    },
  };
}
