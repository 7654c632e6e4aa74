// Free loopback ports for the servers a test starts. `npm start` takes PORT and PORT+1 (the worker's
// metrics), so a test that runs it asks for two in a row.
import { createServer } from 'node:net';

const bindable = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });

/** A port nothing listens on now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** The first of `count` consecutive free ports. */
export async function freePorts(count: number): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const first = await freePort();
    if (first + count - 1 > 65_535) continue;
    let all = true;
    for (let p = first + 1; p < first + count && all; p++) all = await bindable(p);
    if (all) return first;
  }
  throw new Error(`no ${count} consecutive free ports`);
}
