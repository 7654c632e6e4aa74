// 503s during an outage are one story, not one line per request: the first 503 answered is logged once
// at warn, with why; the rest are not; once none has been answered for a quiet period (the 5 s of the
// Retry-After the 503 sends), one more warn line says they stopped, how many there were, and how long.
import type { Logger } from 'pino';

export class OutageLog {
  private since: number | undefined;
  private last = 0;
  private answered = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly logger: Logger,
    readonly quietMs = 5000,
  ) {}

  /** A request was answered 503: `code` is the problem's, `reason` what failed (no stack). */
  unavailable(detail: { code?: string; reason?: string }): void {
    const now = Date.now();
    this.last = now;
    this.answered++;
    if (this.since !== undefined) return;
    this.since = now;
    this.logger.warn(detail, 'answering 503 until the backing service is back');
    this.wait(this.quietMs);
  }

  get inOutage(): boolean {
    return this.since !== undefined;
  }

  private wait(ms: number): void {
    this.timer = setTimeout(() => this.check(), ms);
    this.timer.unref();
  }

  private check(): void {
    const idle = Date.now() - this.last;
    if (idle < this.quietMs) return this.wait(this.quietMs - idle);
    this.logger.warn(
      { answered: this.answered, durationMs: this.last - this.since! },
      'no more 503s: the backing service answers again',
    );
    this.since = undefined;
    this.answered = 0;
  }
}
