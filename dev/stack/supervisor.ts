// The supervisor behind `npm start`: starts groups of processes, waits until each one is ready (it says
// so over IPC, or a probe answers), and stops them gracefully, latest group first, with one signal each.
//
// Every child runs in its own process group, so the terminal's Ctrl-C reaches only the launcher, which
// then sends each child exactly one stop signal; a child sees no second signal unless the user presses
// Ctrl-C twice, which kills every group. A child that the launcher never stops (the launcher was killed)
// notices its IPC channel close and stops itself (`Shutdown.installSignalHandlers`).
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { isSupervisorMessage } from '../../shared/platform/lifecycle';
import { StartupFailure } from '../../shared/platform/failures';

export interface ProcessSpec {
  name: string;
  command: string;
  args: string[];
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Run as this user (root starting Postgres, which refuses to run as root). */
  uid?: number;
  gid?: number;
  /** Output to this file instead of the launcher's terminal (a server whose lines are not for a newcomer). */
  logFile?: string;
  /**
   * How readiness is known: `ipc`, the process sends `{ px: 'ready' }` (our process types); or a probe,
   * polled until it answers true (servers that are not ours).
   */
  ready: 'ipc' | (() => Promise<boolean>);
  /** Runs once the process is ready, before the group counts as started; throws a StartupFailure to refuse. */
  confirm?: () => Promise<void>;
  readyTimeoutMs: number;
  /** The graceful stop signal (default SIGTERM). */
  stopSignal?: NodeJS.Signals;
  /** Says why the process exited before it was ready, when it could not say so itself. */
  explainEarlyExit?: (exit: Exit) => StartupFailure | undefined;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

interface Running {
  spec: ProcessSpec;
  child: ChildProcess;
  exited: Promise<Exit>;
  exit?: Exit;
  ready: boolean;
}

const describeExit = (e: Exit) => (e.signal ? `signal ${e.signal}` : `exit code ${e.code}`);

export class Supervisor {
  private readonly groups: Running[][] = [];
  private stopping = false;
  private stopped: Promise<void> | undefined;
  private unexpected: (name: string, exit: Exit) => void = () => undefined;

  /** Called when a ready process exits without being asked to (no restarts: a crash is reported, not hidden). */
  onUnexpectedExit(handler: (name: string, exit: Exit) => void): void {
    this.unexpected = handler;
  }

  names(): string[] {
    return this.groups.flat().map((r) => r.spec.name);
  }

  /**
   * Starts one group together and resolves when every process in it is ready. Rejects with the first
   * StartupFailure: a process that exits, says it failed, or is not ready in time.
   */
  async start(specs: ProcessSpec[]): Promise<void> {
    if (this.stopping) throw new StartupFailure('start-up interrupted', 'nothing to fix');
    const group = specs.map((spec) => this.spawn(spec));
    this.groups.push(group);
    await Promise.all(group.map((r) => this.untilReady(r)));
  }

  private spawn(spec: ProcessSpec): Running {
    const out = spec.logFile ? openSync(spec.logFile, 'a') : 'inherit';
    let child: ChildProcess;
    try {
      child = spawn(spec.command, spec.args, {
        cwd: spec.cwd,
        env: spec.env,
        uid: spec.uid,
        gid: spec.gid,
        detached: true,
        stdio: ['ignore', out, out, ...(spec.ready === 'ipc' ? (['ipc'] as const) : [])],
      });
    } finally {
      if (typeof out === 'number') closeSync(out);
    }
    const running: Running = { spec, child, ready: false, exited: undefined as unknown as Promise<Exit> };
    running.exited = new Promise<Exit>((resolve) => {
      child.once('error', () => resolve({ code: null, signal: null }));
      // 'close', not 'exit': it comes after the IPC channel has delivered every message the child sent.
      child.once('close', (code, signal) => resolve({ code, signal }));
    }).then((exit) => {
      running.exit = exit;
      if (running.ready && !this.stopping) this.unexpected(spec.name, exit);
      return exit;
    });
    return running;
  }

  private async untilReady(r: Running): Promise<void> {
    const { spec, child } = r;
    let reported: StartupFailure | undefined;
    let spawnError: Error | undefined;
    child.once('error', (err) => (spawnError = err));
    const signalled = new Promise<void>((resolve) => {
      if (spec.ready !== 'ipc') return;
      child.on('message', (m: unknown) => {
        if (!isSupervisorMessage(m)) return;
        if (m.px === 'failed') reported = new StartupFailure(`${spec.name}: ${m.what}`, m.fix);
        else resolve();
      });
    });
    const probe = spec.ready;
    const probed =
      probe === 'ipc'
        ? signalled
        : (async () => {
            while (r.exit === undefined && !this.stopping) {
              if (await probe().catch(() => false)) return;
              await new Promise((res) => setTimeout(res, 100));
            }
          })();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((res) => {
      timer = setTimeout(() => res('timeout'), spec.readyTimeoutMs);
    });
    const outcome = await Promise.race([probed.then(() => 'ready' as const), r.exited, timedOut]);
    clearTimeout(timer);
    if (outcome === 'ready' && r.exit === undefined && !this.stopping) {
      if (spec.confirm) await spec.confirm();
      r.ready = true;
      return;
    }
    if (this.stopping) throw new StartupFailure('start-up interrupted', 'nothing to fix');
    if (outcome === 'timeout') {
      throw new StartupFailure(
        `${spec.name} was not ready after ${Math.round(spec.readyTimeoutMs / 1000)} s`,
        'its log lines above say what it is waiting for',
      );
    }
    const exit = await r.exited;
    if (spawnError) {
      throw new StartupFailure(
        `${spec.name} could not be started (${spawnError.message})`,
        'check the installation',
      );
    }
    throw (
      reported ??
      spec.explainEarlyExit?.(exit) ??
      new StartupFailure(
        `${spec.name} stopped while starting (${describeExit(exit)})`,
        'its log lines above say why',
      )
    );
  }

  /** Stops every process gracefully, latest group first: one stop signal each, then waits for its exit. */
  stop(): Promise<void> {
    this.stopping = true;
    this.stopped ??= (async () => {
      for (const group of [...this.groups].reverse()) {
        await Promise.all(
          group.map(async (r) => {
            if (r.exit === undefined) {
              try {
                r.child.kill(r.spec.stopSignal ?? 'SIGTERM');
              } catch {
                // already gone
              }
            }
            await r.exited;
          }),
        );
      }
    })();
    return this.stopped;
  }

  /** Kills every process and everything it started, at once (a second Ctrl-C). */
  kill(): void {
    this.stopping = true;
    for (const r of this.groups.flat()) {
      if (r.exit !== undefined || r.child.pid === undefined) continue;
      try {
        process.kill(-r.child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}
