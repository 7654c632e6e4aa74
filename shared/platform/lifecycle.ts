// How a process type starts: it runs its start function, then tells its supervisor (`npm start`, over
// the IPC channel it was given) that it is ready — or, when it cannot start, logs one line saying what
// failed and how to fix it, tells the supervisor the same, and exits 1. Without a supervisor (Procfile
// dynos) only the log line is written.
import { StartupFailure, StartupRefused } from './failures';
import { logger } from './log';
import type { Shutdown } from './shutdown';

export type SupervisorMessage = { px: 'ready' } | { px: 'failed'; what: string; fix: string };

export function isSupervisorMessage(m: unknown): m is SupervisorMessage {
  const px = (m as { px?: unknown } | null)?.px;
  return px === 'ready' || px === 'failed';
}

function tell(message: SupervisorMessage): Promise<void> {
  const send = process.send?.bind(process);
  if (!send || !process.connected) return Promise.resolve();
  return new Promise((resolve) => {
    send(message, undefined, {}, () => resolve());
  });
}

export async function runProcess(name: string, start: () => Promise<{ shutdown: Shutdown }>): Promise<void> {
  // A supervisor that is gone (killed, even with SIGKILL) while this process is still starting leaves
  // nobody to stop it: until it is ready, it goes with its supervisor; once ready, Shutdown takes over.
  const orphaned = () => process.exit(1);
  if (process.send) process.once('disconnect', orphaned);
  let shutdown: Shutdown;
  try {
    ({ shutdown } = await start());
  } catch (err) {
    const failure =
      err instanceof StartupFailure
        ? err
        : new StartupFailure(
            `${name} failed while starting (${(err as Error)?.message ?? String(err)})`,
            'the log lines above say more',
          );
    if (failure instanceof StartupRefused) process.stderr.write(failure.lines.map((l) => `${l}\n`).join(''));
    else if (failure.plain) process.stderr.write(`${failure.what.replace(/\s+/g, ' ')}\n`);
    else logger.fatal({ fix: failure.fix }, `${name} could not start: ${failure.what}`);
    await tell({ px: 'failed', what: failure.what, fix: failure.fix });
    process.exit(1);
  }
  process.off('disconnect', orphaned);
  shutdown.installSignalHandlers();
  await tell({ px: 'ready' });
}
