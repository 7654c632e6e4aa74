// The characters that make a string lie on a screen or a terminal, named once. The API's input guard
// refuses them (api/http/input-guard.ts); the command-line tools escape them when they print what the
// service stored or a file holds (rows stored before the guard refused them, a file someone sent):
// C0 and C1 controls and DEL (a CR overwrites the line a terminal shows, ESC and CSI start terminal
// commands), the line and paragraph separators U+2028/U+2029, bidirectional controls (U+202A–U+202E,
// U+2066–U+2069, the marks U+200E, U+200F, U+061C: "Acme\u202Eetlav" shows as "Acmevalte"), every
// other invisible format character (Unicode's Cf: zero-width space, word joiner, BOM, soft hyphen, the
// tag characters that smuggle text), the blank Hangul fillers and other invisible letters a name can be
// made of, and unpaired surrogates. ZWNJ and ZWJ are taken (Persian, the Indic scripts and emoji
// sequences need them) but shown escaped, so an operator sees them.

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f]/;
/** In text: a tab, a line feed, and a carriage return right before a line feed are fine. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL_IN_TEXT = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]|\r(?!\n)/;
// With the u flag, \p{Cs} matches only a surrogate without its pair.
const DECEPTIVE =
  /[\u0080-\u009f\u2028\u2029\u115f\u1160\u3164\uffa0]|\u034f|\u17b4|\u17b5|(?![\u200c\u200d])\p{Cf}|\p{Cs}/u;

const codePoint = (c: string) => c.codePointAt(0) ?? 0;
const hex = (cp: number) => cp.toString(16).toUpperCase().padStart(4, '0');

function kindOf(c: string): string {
  const cp = codePoint(c);
  if (cp < 0x20 || cp === 0x7f) return 'a control character';
  if (cp >= 0x80 && cp <= 0x9f) return 'a C1 control character';
  if (cp === 0x2028 || cp === 0x2029) return 'a line or paragraph separator';
  const bidi =
    (cp >= 0x202a && cp <= 0x202e) ||
    (cp >= 0x2066 && cp <= 0x2069) ||
    cp === 0x200e ||
    cp === 0x200f ||
    cp === 0x061c;
  if (bidi) return 'a bidirectional control';
  if (cp >= 0xd800 && cp <= 0xdfff) return 'an unpaired surrogate';
  return 'an invisible character';
}

/**
 * Why a string is refused, or null: its first refused character named by its code point. `text`: the
 * string may span lines (tab, LF, CRLF); otherwise it is one line, and those are refused too.
 */
export function refusedCharacter(value: string, text: boolean): string | null {
  const found = (text ? CONTROL_IN_TEXT : CONTROL).exec(value) ?? DECEPTIVE.exec(value);
  if (!found) return null;
  const c = found[0];
  const line = !text && /[\t\n\r]/.test(c) ? ' (this field is one line)' : '';
  return `must not contain U+${hex(codePoint(c))}, ${kindOf(c)}${line}`;
}

// What a terminal is shown escaped: the characters above, and ZWNJ and ZWJ.
const ESCAPED =
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u115f\u1160\u3164\uffa0]|\u034f|\u17b4|\u17b5|\p{Cf}|\p{Cs}/gu;
// JSON.stringify escapes C0 in strings itself; the line feeds left are its indentation.
const ESCAPED_IN_JSON =
  /[\u007f-\u009f\u2028\u2029\u115f\u1160\u3164\uffa0]|\u034f|\u17b4|\u17b5|\p{Cf}|\p{Cs}/gu;

/**
 * A stored string as a terminal may show it: every character above as `\u{…}` (a CR is `\u{000D}`);
 * `lines` keeps line feeds and tabs (a description printed on lines of its own).
 */
export function printable(value: string, opts: { lines?: boolean } = {}): string {
  return value.replace(ESCAPED, (c) =>
    opts.lines && (c === '\n' || c === '\t') ? c : `\\u{${hex(codePoint(c))}}`,
  );
}

/** JSON.stringify whose output a terminal shows as it is: those characters as `\uXXXX` escapes (still JSON). */
export function printableJson(value: unknown, indent?: number): string {
  return (JSON.stringify(value, null, indent) ?? 'undefined').replace(ESCAPED_IN_JSON, (c) =>
    [...Array(c.length).keys()].map((i) => `\\u${hex(c.charCodeAt(i)).toLowerCase()}`).join(''),
  );
}
