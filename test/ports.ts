// Free loopback ports for the servers a test starts. `npm start` takes PORT and PORT+1 (the worker's
// metrics), so a test that runs it asks for two in a row.
//
// A port is handed out some seconds before the server it is for binds it (a child process starting),
// so it must not be one anything else takes meanwhile. Ports the kernel hands out (listen on 0, and
// every outgoing connection's local port) come from the ephemeral range, 32768–60999 on Linux; these
// come from below it, from a block of their own per test worker (VITEST_POOL_ID), so neither a client
// socket nor another test file running beside this one takes them.
import { createServer } from 'node:net';

const FIRST = 20_000;
const LAST = 32_700;
const POOLS = 8;
const BLOCK = Math.floor((LAST - FIRST) / POOLS);

const pool = Math.max(0, (Number(process.env.VITEST_POOL_ID) || 1) - 1) % POOLS;
const blockStart = FIRST + pool * BLOCK;
// Files of one worker run one after another and may each load this module afresh: start anywhere in
// the block, so a file does not get the port its predecessor's child may still be closing.
let next = Math.floor(Math.random() * BLOCK);

const bindable = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });

/** The first of `count` consecutive ports nothing listens on now, from this worker's block. */
export async function freePorts(count: number): Promise<number> {
  for (let attempt = 0; attempt < BLOCK; attempt++) {
    const offset = next % (BLOCK - count);
    next = offset + count;
    const first = blockStart + offset;
    let all = true;
    for (let p = first; p < first + count && all; p++) all = await bindable(p);
    if (all) return first;
  }
  throw new Error(`no ${count} consecutive free ports in ${blockStart}–${blockStart + BLOCK - 1}`);
}

/** A port nothing listens on now. */
export const freePort = (): Promise<number> => freePorts(1);
