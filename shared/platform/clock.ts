// Time as services read it: a clock passed in, so a window that closes (a vote, a reveal, a quote, a
// lease) is read from the clock its caller gave, and a test moves time instead of waiting it out.
export interface Clock {
  now(): Date;
}

/** The machine's clock: what every process uses. */
export const systemClock: Clock = { now: () => new Date() };
