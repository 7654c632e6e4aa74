// The trustee's page: the trustee's client in the browser, doing what shared/governance/trustee-client.ts
// does — its part in a room's key ceremony (deal once, judge every dealing, answer complaints) and its
// partial decryptions of a closed vote — with @noble/curves (ristretto255, ed25519, x25519) served as the
// package's own modules and WebCrypto (HKDF, AES-GCM, SHA-2). The trustee's file stays in the page: the
// service receives signed public messages and proofs only.
import { NOBLE_PREFIX, nobleImportMap } from './noble-assets';

/** The page, its scripts carrying `nonce` (the response's: ./csp.ts). */
export const trusteePage = (nonce: string): string => `<h1>Trustee</h1>
<p>For a room’s trustees: take your part in the room’s key ceremony, and after a vote’s close publish
your partial decryption of its ballots. Your trustee file (<code>npm run trustee -- keys --out trustee.json</code>)
stays in this page; after dealing, save the file the page shows again (it keeps what you dealt, to
answer a complaint). The same steps run from the command line: <code>npm run trustee -- ceremony</code>,
<code>npm run trustee -- decrypt</code>.</p>
<form id="trustee-form">
<label for="trustee-file">Your trustee file (JSON)</label><br>
<textarea id="trustee-file" required autocomplete="off" spellcheck="false"></textarea><br>
<label for="room">Room</label> <input id="room" placeholder="room_…" autocomplete="off">
<button type="button" id="ceremony">Take my part in the ceremony</button><br>
<label for="proposal">Closed proposal</label> <input id="proposal" placeholder="prop_…" autocomplete="off">
<button type="button" id="decrypt">Decrypt its ballots</button>
</form>
<p id="trustee-status" role="status"></p>
<pre id="trustee-out" class="hash"></pre>
${nobleImportMap(nonce)}
<script type="module" nonce="${nonce}">
import { ristretto255, ed25519, x25519 } from '${NOBLE_PREFIX}curves/ed25519.js';
const P = ristretto255.Point, n = P.Fn.ORDER, G = P.BASE;
const enc = new TextEncoder();
const $ = (id) => document.getElementById(id);
const hex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
const fromHex = (h) => Uint8Array.from(h.match(/../g) || [], (x) => parseInt(x, 16));
const b64u = (b) => btoa(String.fromCharCode(...b)).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
const fromB64u = (s) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
const toBig = (b) => BigInt('0x' + (hex(b) || '0'));
const be32 = (k) => fromHex(k.toString(16).padStart(64, '0'));
const mod = (a) => ((a % n) + n) % n;
const scalar = () => { for (;;) { const k = toBig(crypto.getRandomValues(new Uint8Array(64))) % n; if (k) return k; } };
const mul = (p, k) => (mod(k) === 0n ? P.ZERO : p.multiply(mod(k)));
const pt = (p) => b64u(p.toBytes());
const cat = (...parts) => { const out = new Uint8Array(parts.reduce((a, p) => a + p.length, 0)); let at = 0; for (const p of parts) { out.set(p, at); at += p.length; } return out; };
async function hkdf(ikm, salt, info) {
  const key = await crypto.subtle.importKey('raw', ikm, 'HKDF', false, ['deriveBits']);
  return new Uint8Array(await crypto.subtle.deriveBits({ name: 'HKDF', hash: 'SHA-256', salt, info: enc.encode(info) }, key, 256));
}
async function aes(key, usage) { return crypto.subtle.importKey('raw', key, 'AES-GCM', false, [usage]); }
async function challenge(domain, ...parts) {
  const chunks = [domain, ...parts].map((p) => (typeof p === 'string' ? enc.encode(p) : p));
  const out = new Uint8Array(chunks.reduce((a, c) => a + 4 + c.length, 0));
  let at = 0;
  for (const c of chunks) { new DataView(out.buffer).setUint32(at, c.length); out.set(c, at + 4); at += 4 + c.length; }
  return toBig(new Uint8Array(await crypto.subtle.digest('SHA-512', out))) % n;
}
function canonical(v) {
  if (Array.isArray(v)) return '[' + v.map(canonical).join(',') + ']';
  if (v && typeof v === 'object') return '{' + Object.keys(v).sort().map((k) => JSON.stringify(k) + ':' + canonical(v[k])).join(',') + '}';
  return JSON.stringify(v);
}
async function keysFrom(secret) {
  const seed = await hkdf(enc.encode(secret), enc.encode('proof-exchange'), 'trustee/ed25519/v1');
  const box = await hkdf(enc.encode(secret), enc.encode('proof-exchange'), 'trustee/x25519/v1');
  return { seed, box, publicKey: b64u(ed25519.getPublicKey(seed)), encryptionKey: b64u(x25519.getPublicKey(box)) };
}
async function sign(keys, roomId, kind, body) {
  const digest = hex(new Uint8Array(await crypto.subtle.digest('SHA-256', enc.encode(canonical(body)))));
  const text = 'proof-exchange/governance/trustee/v1\\nroom:' + roomId + '\\nkind:' + kind + '\\nsha256:' + digest;
  return b64u(ed25519.sign(enc.encode(text), keys.seed));
}
const shareAad = (roomId, dealer, to) => 'proof-exchange/governance/dkg-share/v1\\n' + roomId + '\\n' + dealer + '\\n' + to;
async function sealTo(recipient, aad, plain) {
  const eph = crypto.getRandomValues(new Uint8Array(32));
  const ephPub = x25519.getPublicKey(eph);
  const key = await hkdf(x25519.getSharedSecret(eph, recipient), cat(ephPub, recipient), 'proof-exchange/sealed-box/v1');
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const out = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv, additionalData: enc.encode(aad) }, await aes(key, 'encrypt'), plain));
  const body = out.subarray(0, out.length - 16), tag = out.subarray(out.length - 16);
  return cat(Uint8Array.of(1), ephPub, Uint8Array.of(1), iv, tag, body);
}
async function openFrom(keys, aad, sealed) {
  if (sealed[0] !== 1 || sealed[33] !== 1) return null;
  const ephPub = sealed.subarray(1, 33), inner = sealed.subarray(33);
  const mine = x25519.getPublicKey(keys.box);
  const key = await hkdf(x25519.getSharedSecret(keys.box, ephPub), cat(ephPub, mine), 'proof-exchange/sealed-box/v1');
  try {
    const plain = await crypto.subtle.decrypt({ name: 'AES-GCM', iv: inner.subarray(1, 13), additionalData: enc.encode(aad) },
      await aes(key, 'decrypt'), cat(inner.subarray(29), inner.subarray(13, 29)));
    const s = toBig(new Uint8Array(plain));
    return plain.byteLength === 32 && s < n ? s : null;
  } catch { return null; }
}
const expected = (commitments, j) => commitments.reduce((acc, c, k) => acc.add(mul(P.fromBytes(fromB64u(c)), BigInt(j) ** BigInt(k))), P.ZERO);
const matches = (commitments, j, s) => s !== null && mul(G, s).equals(expected(commitments, j));
async function call(method, path, body) {
  const res = await fetch(path, { method, headers: body ? { 'content-type': 'application/json', accept: 'application/json' } : { accept: 'application/json' }, body: body ? JSON.stringify(body) : undefined });
  const json = await res.json();
  if (!res.ok) throw new Error(json.code + ': ' + json.detail);
  return json;
}
const readFile = () => JSON.parse($('trustee-file').value);
const say = (text, out) => { $('trustee-status').textContent = text; if (out !== undefined) $('trustee-out').textContent = JSON.stringify(out, null, 2); };
async function shareFrom(ceremony, keys, roomId, me, dealer) {
  const answered = ceremony.answers.find((a) => a.trustee === dealer && a.body.complainer === me);
  if (answered) return toBig(fromHex(answered.body.share));
  const d = ceremony.dealings.find((x) => x.trustee === dealer);
  return d ? openFrom(keys, shareAad(roomId, dealer, me), fromB64u(d.body.shares[me - 1])) : null;
}
async function ceremonyRound() {
  const file = readFile();
  const roomId = $('room').value.trim();
  const keys = await keysFrom(file.secret);
  let c = await call('GET', '/api/governance/rooms/' + roomId + '/trustees');
  const me = (c.trustees.find((t) => t.publicKey === keys.publicKey) || {}).index;
  if (!me) throw new Error('This file is not one of the trustees of ' + roomId + '.');
  const did = [];
  const post = async (kind, body, signKind) => { c = await call('POST', '/api/governance/rooms/' + roomId + '/trustees/' + kind, { trustee: me, body, signature: await sign(keys, roomId, signKind, body) }); };
  if (c.status === 'dealing' && !c.dealings.some((d) => d.trustee === me)) {
    const coefficients = Array.from({ length: c.threshold }, scalar);
    const plain = [], shares = [];
    for (const t of c.trustees) {
      const s = coefficients.reduceRight((acc, a) => mod(acc * BigInt(t.index) + a), 0n);
      plain.push(hex(be32(s)));
      shares.push(b64u(await sealTo(fromB64u(t.encryptionKey), shareAad(roomId, me, t.index), be32(s))));
    }
    file.dealt = Object.assign({}, file.dealt, { [roomId]: plain });
    $('trustee-file').value = JSON.stringify(file, null, 2);
    await post('dealings', { commitments: coefficients.map((a) => pt(mul(G, a))), shares }, 'dealing');
    did.push('dealt');
  }
  for (const d of c.dealings) {
    if (c.status !== 'dealing') break;
    if (c.verdicts.some((v) => v.trustee === me && v.body.dealer === d.trustee)) continue;
    const ok = d.body.commitments.length === c.threshold && matches(d.body.commitments, me, await shareFrom(c, keys, roomId, me, d.trustee));
    await post('verdicts', { dealer: d.trustee, ok }, 'verdict');
    did.push((ok ? 'accepted' : 'complained about') + ' trustee ' + d.trustee + '’s dealing');
  }
  for (const p of c.pendingComplaints.filter((x) => x.dealer === me)) {
    if (c.status !== 'dealing') break;
    const share = file.dealt && file.dealt[roomId] && file.dealt[roomId][p.complainer - 1];
    if (!share) throw new Error('Trustee ' + p.complainer + ' complained about your dealing, and this file does not hold what you dealt.');
    await post('answers', { complainer: p.complainer, share }, 'answer');
    did.push('answered trustee ' + p.complainer + '’s complaint');
  }
  return { did, status: c.status, jointKey: c.jointKey };
}
async function decrypt() {
  const file = readFile();
  const proposalId = $('proposal').value.trim();
  const keys = await keysFrom(file.secret);
  const state = await call('GET', '/api/governance/proposals/' + proposalId);
  if (state.status !== 'decrypting' || !(Date.parse(state.votingEndsAt) <= Date.now()))
    throw new Error('Nothing to decrypt now: the proposal is ' + state.status + ' (a trustee decrypts only after the close).');
  const key = await call('GET', '/api/governance/proposals/' + proposalId + '/ballot-key');
  const c = await call('GET', '/api/governance/rooms/' + key.roomId + '/trustees');
  const me = (c.trustees.find((t) => t.publicKey === keys.publicKey) || {}).index;
  if (!me) throw new Error('This file is not one of the room’s trustees.');
  let x = 0n;
  for (const dealer of c.qualified) {
    const s = await shareFrom(c, keys, key.roomId, me, dealer);
    if (s === null) throw new Error('The share trustee ' + dealer + ' dealt to you does not open.');
    x = mod(x + s);
  }
  const Yi = mul(G, x);
  if (pt(Yi) !== c.verificationShares[me - 1]) throw new Error('Your shares do not add up to your verification share.');
  const listed = await call('GET', '/api/governance/proposals/' + proposalId + '/ballots');
  const shares = [];
  for (const b of listed.ballots) {
    const ct = fromB64u(b.ciphertext);
    let R;
    try { R = P.fromBytes(ct.subarray(0, 32)); } catch { continue; }
    const cc = toBig(ct.subarray(32, 64)), z = toBig(ct.subarray(64, 96));
    if (R.equals(P.ZERO) || cc >= n || z >= n) continue;
    const A = mul(G, z).subtract(mul(R, cc));
    if ((await challenge('proof-exchange/governance/ballot-pok/v1', proposalId, R.toBytes(), A.toBytes())) !== cc) continue;
    const D = mul(R, x), k = scalar();
    const c2 = await challenge('proof-exchange/governance/partial-decryption/v1', proposalId, String(me), Yi.toBytes(), R.toBytes(), D.toBytes(), mul(G, k).toBytes(), mul(R, k).toBytes());
    shares.push({ nullifier: b.nullifier, share: pt(D), proof: { c: hex(be32(c2)), z: hex(be32(mod(k + c2 * x))) } });
  }
  // Signed as a set, ordered by nullifier: the service checks the signature before any proof.
  shares.sort((a, b) => (a.nullifier < b.nullifier ? -1 : a.nullifier > b.nullifier ? 1 : 0));
  const signature = await sign(keys, key.roomId, 'decryption', { proposalId, shares });
  return call('POST', '/api/governance/proposals/' + proposalId + '/decryptions', { trustee: me, shares, signature });
}
const run = (fn, busy) => async () => {
  say(busy);
  try { say('Done.', await fn()); } catch (err) { say('Not done: ' + (err && err.message ? err.message : String(err))); }
};
$('ceremony').addEventListener('click', run(ceremonyRound, 'Taking part in the ceremony…'));
$('decrypt').addEventListener('click', run(decrypt, 'Decrypting on this device…'));
</script>`;
