// Group commit: calls made in the same turn of the event loop are run together by one `run` (one
// statement, one commit, one round trip), and each caller gets its own result or the batch's error.
// With `maxInFlight`, calls arriving while that many runs are under way wait for one to end and go
// together in the next: the busier the path, the larger the groups.
export class MicroBatch<I, R> {
  private waiting: Array<{ item: I; resolve(r: R): void; reject(err: unknown): void }> = [];
  private scheduled = false;
  private inFlight = 0;

  /** `run` returns one result per item, in the order given. */
  constructor(
    private readonly run: (items: I[]) => Promise<R[]>,
    private readonly max = 200,
    private readonly maxInFlight = Infinity,
  ) {}

  add(item: I): Promise<R> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.maxInFlight) return;
    this.scheduled = true;
    setImmediate(() => void this.flush());
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    const batch = this.waiting.splice(0, this.max);
    if (batch.length === 0) return;
    this.inFlight++;
    if (this.waiting.length) this.schedule();
    try {
      const results = await this.run(batch.map((b) => b.item));
      batch.forEach((b, i) => b.resolve(results[i]!));
    } catch (err) {
      for (const b of batch) b.reject(err);
    } finally {
      this.inFlight--;
      if (this.waiting.length) this.schedule();
    }
  }
}

/** One MicroBatch per pair of owners (e.g. a Queues and a Db), made on first use. */
export function batchPer<A extends object, B extends object, T>(make: (a: A, b: B) => T): (a: A, b: B) => T {
  const byA = new WeakMap<A, WeakMap<B, T>>();
  return (a, b) => {
    let byB = byA.get(a);
    if (!byB) byA.set(a, (byB = new WeakMap()));
    let t = byB.get(b);
    if (t === undefined) byB.set(b, (t = make(a, b)));
    return t;
  };
}
