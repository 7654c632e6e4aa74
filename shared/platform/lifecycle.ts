// How a process type starts: it runs its start function, then tells its supervisor (`npm start`, over
// the IPC channel it was given) that it is ready — or, when it cannot start, logs one line saying what
// failed and how to fix it, tells the supervisor the same, and exits 1 (78 for what the deployment's
// configuration fixes). Without a supervisor (Procfile dynos) only the log line is written.
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
  // A stop signal that comes while starting — or just after the start function has said it started,
  // before the shutdown registry's handlers are in — is kept and honoured once they are: never the
  // default action that ends the process with the signal, half-closed. A start that does not finish
  // still stops, after a grace period; a second signal stops it at once.
  let early: NodeJS.Signals | undefined;
  const onEarlySignal = (sig: NodeJS.Signals) => {
    if (early) process.exit(1);
    early = sig;
    setTimeout(() => process.exit(1), EARLY_SIGNAL_GRACE_MS).unref();
  };
  process.on('SIGTERM', onEarlySignal);
  process.on('SIGINT', onEarlySignal);
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
    process.exit(failure.exitCode);
  }
  process.off('disconnect', orphaned);
  shutdown.installSignalHandlers();
  process.off('SIGTERM', onEarlySignal);
  process.off('SIGINT', onEarlySignal);
  // Stopped while starting: the registry's handler takes the kept signal and closes everything.
  if (early) process.kill(process.pid, early);
  else await tell({ px: 'ready' });
}

/** How long a stop signal received while starting waits for the start to finish. */
const EARLY_SIGNAL_GRACE_MS = 15_000;
