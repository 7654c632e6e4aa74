// What an organization's API key may do: its scopes, and the one rule that says which scope a route
// needs, derived from the route's product line and method (a `read` key may GET, never write).
import { AppError } from '../platform/errors';
import type { ProductLine } from './tiers';

export const keyScopes = ['admin', 'workflows', 'governance', 'treasury', 'auctions', 'read'] as const;
export type KeyScope = (typeof keyScopes)[number];

/** The license key itself: the organization's admin key. */
export const LICENSE_KEY_SCOPES: readonly KeyScope[] = ['admin'];

/**
 * The scope a route needs from an organization's key. A write needs the route's product line (or
 * `admin`; a write outside every line, such as paying an exchange job from the license's credit, needs
 * `admin`); a read needs `read`, which every scope includes for its own line. `explicit` is a route's
 * own declaration where the derivation does not fit.
 */
export function requiredScope(
  method: string,
  product: ProductLine | undefined,
  explicit?: KeyScope,
): KeyScope {
  if (explicit) return explicit;
  if (method.toLowerCase() === 'get') return 'read';
  return product ?? 'admin';
}

/** Whether a key holding `scopes` may use a route that needs `needed` (of product line `product`). */
export function scopeAllows(
  scopes: readonly KeyScope[],
  needed: KeyScope,
  product: ProductLine | undefined,
): boolean {
  if (scopes.includes('admin')) return true;
  if (needed === 'admin') return false;
  if (needed === 'read') {
    // A line's key reads its own line; a read key reads every line the license grants.
    return scopes.includes('read') || (product ? scopes.includes(product) : scopes.length > 0);
  }
  return scopes.includes(needed);
}

/** Refuses a key whose scopes do not cover the route (403 insufficient_scope). */
export function requireScope(
  scopes: readonly KeyScope[],
  needed: KeyScope,
  product: ProductLine | undefined,
): void {
  if (scopeAllows(scopes, needed, product)) return;
  throw new AppError(
    403,
    'insufficient_scope',
    `This key's scopes (${scopes.join(', ') || 'none'}) do not include ${needed}${
      needed === 'read' ? '' : ' (or admin)'
    }; an admin key of the organization can create one that does.`,
  );
}
