// A clock a test moves: the real time plus an offset. A window opened with the clock set in the past
// closes when the offset comes back to zero, so time only ever catches up with the real one: clients
// that read the real time (the CLIs, the trustee and ballot clients, a browser) see the same windows.
import type { Clock } from '../shared/platform/clock';

export class TestClock implements Clock {
  private offsetMs = 0;

  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }

  /** Sets the clock `ms` behind (negative) or ahead of the real time. */
  setOffset(ms: number): void {
    this.offsetMs = ms;
  }

  advance(ms: number): void {
    this.offsetMs += ms;
  }

  /** Back to the real time. */
  reset(): void {
    this.offsetMs = 0;
  }
}
