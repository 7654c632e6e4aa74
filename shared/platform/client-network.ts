// Who a caller without a credential is, for budgets, trial limits and anonymous scopes: its IPv4
// address, or its IPv6 network. A single IPv6 subscriber is handed a whole /64 (often a /56 or /48), so
// counting IPv6 addresses one by one would give each caller as many budgets as it has addresses.
import { createHmac } from 'node:crypto';
import ipaddr from 'ipaddr.js';
import { purposeKey } from './sealing';

/**
 * The network a client address counts as: IPv4 (and IPv4-mapped IPv6) as the address itself, IPv6 as
 * its first `v6PrefixLength` bits in CIDR form (`2001:db8:1:2::/64`). Anything that does not parse is
 * kept as given, so it still counts, alone.
 */
export function clientNetwork(address: string, v6PrefixLength: number): string {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address.replace(/^\[|\]$/g, '').replace(/%.*$/, ''));
  } catch {
    return address;
  }
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
    parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  }
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const bytes = parsed.toByteArray();
  const keep = Math.max(0, Math.min(128, v6PrefixLength));
  for (let bit = keep; bit < 128; bit++) bytes[bit >> 3]! &= ~(0x80 >> (bit & 7));
  return `${ipaddr.fromByteArray(bytes).toString()}/${keep}`;
}

/** Tags already computed, by key: a keep-alive client's every request asks for the same one. */
const tags = new WeakMap<Buffer, Map<string, string>>();
/** A flood of networks only empties the memo: each still costs its HMAC, as without one. */
const MAX_TAGS = 10_000;

/**
 * A client network as it may be stored (an agent's registration, an anonymous scope): an HMAC under a
 * service key, so a database dump holds no address, and equal networks still compare equal.
 */
export function networkTag(network: string): string {
  const key = purposeKey('client-network');
  let known = tags.get(key);
  if (!known) tags.set(key, (known = new Map()));
  let tag = known.get(network);
  if (tag === undefined) {
    tag = createHmac('sha256', key).update(network).digest('base64url').slice(0, 22);
    if (known.size >= MAX_TAGS) known.clear();
    known.set(network, tag);
  }
  return tag;
}
