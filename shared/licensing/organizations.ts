// Organization names as one key per organization, whatever the spelling: the TRIAL is once per key.
// A name that only looks like another (Greek or Cyrillic letters, "The …", "S.A.", "GmbH & Co. KG")
// is the same organization.
import unhomoglyph from 'unhomoglyph';

/**
 * Legal forms (and the article) dropped from either end of a name. Written as a name's words are once
 * punctuation is gone; a run of single letters is read as one word, so "S.A." is `sa`, "S.p.A." `spa`,
 * "L.L.C." `llc`, and "GmbH & Co. KG" is the three words `gmbh co kg`. The one list: add a form here
 * (and recompute stored keys in a migration, as 20261125000300 does).
 */
export const legalForms: readonly string[] = [
  'the',
  // English-speaking
  ...'inc incorporated corp corporation co company llc pllc ltd limited plc'.split(' '),
  ...'lp llp lllp pty pte pvt cic'.split(' '),
  // German-speaking, Dutch, Belgian
  ...'gmbh mbh ag kg kgaa ohg ug ev eg se bv nv bvba vof'.split(' '),
  // French, Spanish, Portuguese, Italian
  ...'sa sas sasu sarl sca snc sl slu ltda lda spa srl srls sapa'.split(' '),
  // Nordic, Central and Eastern Europe
  ...'oy oyj ab as asa aps hf sro sp zoo kft zrt doo'.split(' '),
  // Asia-Pacific
  ...'kk gk bhd sdn'.split(' '),
];

/** UTS #39 skeleton: NFD, the confusables.txt mapping (prototype characters), NFD again. */
const skeleton = (s: string): string => unhomoglyph(s.normalize('NFD')).normalize('NFD');

/**
 * A name's letters as compared: compatibility-decomposed (full-width and ligature forms are their
 * letters), skeletonized, then upper- and lower-cased each followed by the skeleton again. Case and
 * confusables interact ("I" looks like "l", and is "i" in lower case), so both cases pass through the
 * skeleton and every spelling of a letter ends in the same prototype. Marks are dropped ("é" is "e").
 */
function fold(text: string): string {
  let s = skeleton(text.normalize('NFKD'));
  s = skeleton(s.toUpperCase());
  s = skeleton(s.toLowerCase());
  return s.replace(/\p{M}+/gu, '');
}

/** Words of a folded name, a run of single letters or digits joined into one word ("s a" is "sa"). */
function words(folded: string): string[] {
  const out: string[] = [];
  let run = '';
  for (const w of folded.split(/[^\p{L}\p{N}]+/u).filter(Boolean)) {
    if ([...w].length === 1) {
      run += w;
      continue;
    }
    if (run) out.push(run);
    run = '';
    out.push(w);
  }
  if (run) out.push(run);
  return out;
}

const legal = new Set(legalForms.flatMap((f) => words(fold(f))));

/**
 * One key per organization: the folded words without legal forms at either end (at least one word
 * stays), joined. "Acme", "ACME, Inc.", "The Acme", "Acme S.A.", "ACME GmbH & Co. KG" and "Αcme" with
 * a Greek alpha are one key; "Acme Labs" is another. Empty when the name has no letter or digit.
 */
export function normalizeOrganization(name: string): string {
  const w = words(fold(name));
  while (w.length > 1 && legal.has(w[w.length - 1]!)) w.pop();
  while (w.length > 1 && legal.has(w[0]!)) w.shift();
  return w.join('');
}
