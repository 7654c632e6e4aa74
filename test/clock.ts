// A clock a test moves: the real time plus an offset, given to the app as its deps.clock. A window
// opened with the clock set in the past closes when the offset comes back to zero, so time only catches
// up with the real one; or the test moves the clock past a window once the clients that read the real
// time against it (the CLIs, the trustee and ballot clients, a browser) are done, and resets it after.
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

  /** Moves the clock to `extraMs` past `at`, if it is not there yet: a window waited out at once. */
  advanceTo(at: string | Date, extraMs = 30): void {
    const ms = new Date(at).getTime() + extraMs - this.now().getTime();
    if (ms > 0) this.offsetMs += ms;
  }

  /** Back to the real time. */
  reset(): void {
    this.offsetMs = 0;
  }
}
