// What a browser reports against a page's Content-Security-Policy: every securitypolicyviolation event
// the page fires (listened for before any of its scripts run) and every console line that says the
// policy refused something. A page that works under its policy reports nothing.
import type { Page } from 'playwright-core';

export interface PolicyWatch {
  /** One line per refusal: the directive, then what was refused. */
  violations: string[];
}

export async function watchPolicy(page: Page): Promise<PolicyWatch> {
  const watch: PolicyWatch = { violations: [] };
  // A binding and an init script run outside the page's policy, so the watcher is never refused itself.
  await page.exposeFunction('__pxPolicyViolation', (line: string) => watch.violations.push(line));
  await page.addInitScript(`document.addEventListener('securitypolicyviolation', (e) =>
    window.__pxPolicyViolation(e.effectiveDirective + ': ' + (e.blockedURI || 'inline') + ' (' + location.pathname + ')'))`);
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) watch.violations.push(`console: ${m.text()}`);
  });
  return watch;
}

/** The policy's directives, by name. */
export function directives(csp: string): Map<string, string[]> {
  return new Map(
    csp
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .filter((parts) => parts[0])
      .map(([name, ...sources]) => [name!.toLowerCase(), sources]),
  );
}
