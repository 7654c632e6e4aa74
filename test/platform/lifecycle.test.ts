// A process whose supervisor disappears goes with it, whether it was still starting or ready; a stop
// signal that arrives as it starts still stops it gracefully.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const fixture = fileURLToPath(new URL('./fixtures/starting-process.ts', import.meta.url));

async function underSupervisor(args: string[]) {
  const child = spawn(process.execPath, ['--import', 'tsx', fixture, ...args], {
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (stderr.includes('starting')) resolve();
    });
    child.once('exit', () => reject(new Error(`fixture exited early: ${stderr}`)));
  });
  return child;
}

async function exitsWithin(child: ReturnType<typeof spawn>, ms: number): Promise<number | null> {
  const timer = setTimeout(() => child.kill('SIGKILL'), ms);
  const [code, signal] = (await once(child, 'exit')) as [number | null, string | null];
  clearTimeout(timer);
  return signal === 'SIGKILL' ? null : code;
}

describe('a supervised process', () => {
  it('exits when its supervisor is gone while it is still starting', async () => {
    const child = await underSupervisor([]);
    child.disconnect(); // what the child sees when the launcher dies, SIGKILL included
    expect(await exitsWithin(child, 10_000)).toBe(1);
  }, 30_000);

  it('stops gracefully when its supervisor is gone once it is ready', async () => {
    const child = await underSupervisor(['--ready']);
    await new Promise((r) => setTimeout(r, 300)); // its ready message is sent
    child.disconnect();
    expect(await exitsWithin(child, 10_000)).toBe(0);
  }, 30_000);

  it('closes what it opened and exits 0 when stopped the moment it says it started', async () => {
    const early = fileURLToPath(new URL('./fixtures/signalled-while-starting.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', early], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    const [code, signal] = (await once(child, 'exit')) as [number | null, string | null];
    expect(signal).toBeNull();
    expect(code).toBe(0);
    expect(out).toBe('started\nclosed\n');
  }, 30_000);
});
