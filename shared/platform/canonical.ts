// Canonical JSON (sorted keys, no whitespace): the byte string that hashes and signatures commit to.
// Follows RFC 8785 for the values this service produces (strings, integers, booleans, null, arrays, objects).
// Every hash of the chain and every signature goes through here, so it builds the string in one pass.

export function canonicalJson(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError('canonical JSON cannot hold a non-finite number');
      return JSON.stringify(value);
    case 'bigint':
      return JSON.stringify(value.toString());
    case 'object': {
      if (value === null) return 'null';
      if (Array.isArray(value)) {
        let out = '[';
        for (let i = 0; i < value.length; i++) {
          if (i > 0) out += ',';
          const v: unknown = value[i];
          out += canonicalJson(v === undefined ? null : v);
        }
        return `${out}]`;
      }
      if (value instanceof Date) return JSON.stringify(value.toISOString());
      const record = value as Record<string, unknown>;
      // Default sort orders by UTF-16 code units, as RFC 8785 asks.
      const keys = Object.keys(record).sort();
      let out = '{';
      for (const k of keys) {
        const v = record[k];
        if (v === undefined) continue;
        if (out.length > 1) out += ',';
        out += `${JSON.stringify(k)}:${canonicalJson(v)}`;
      }
      return `${out}}`;
    }
    default:
      throw new TypeError(`canonical JSON cannot hold a ${typeof value}`);
  }
}
