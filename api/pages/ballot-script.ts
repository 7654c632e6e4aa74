// The voting page's script: the voter's client in the browser. It makes the same ballot as
// shared/governance/ballot-client.ts — the vote padded and encrypted to the proposal key (WebCrypto
// X25519, HKDF-SHA256, AES-256-GCM), the membership proof made here with snarkjs from the circuit's
// public wasm and zkey — and sends only the nullifier, root, ciphertext and proof. The identity secret
// stays in the page. The whole member tree is fetched (never one member's path). No Poseidon is needed
// here: the service publishes every tree node, and the circuit computes the root and nullifier itself.
import { BALLOT_CIRCUIT, VOTE_PLAINTEXT_BYTES } from '../../shared/governance/ballot-protocol';
import { escapeHtml } from './layout';
import { NOBLE_PREFIX, nobleImportMap } from './noble-assets';

/**
 * The vote encrypted to the trustees' joint key, byte for byte shared/governance/threshold.ts's
 * `encryptThresholdVote`: R = r·G, a Schnorr proof of knowledge of r bound to the proposal (sha512 over
 * length-prefixed parts), the AES key from HKDF-SHA256 of r·Y. Exposed as window.encryptThresholdVote.
 */
const thresholdModule = (proposalId: string, nonce: string) => `${nobleImportMap(nonce)}
<script type="module" nonce="${nonce}">
import { ristretto255 } from '${NOBLE_PREFIX}curves/ed25519.js';
const P = ristretto255.Point, n = P.Fn.ORDER, G = P.BASE;
const enc = new TextEncoder();
const toBig = (b) => BigInt('0x' + (Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('') || '0'));
const be32 = (k) => Uint8Array.from(k.toString(16).padStart(64, '0').match(/../g), (h) => parseInt(h, 16));
const scalar = () => { for (;;) { const k = toBig(crypto.getRandomValues(new Uint8Array(64))) % n; if (k) return k; } };
async function challenge(parts) {
  const chunks = parts.map((p) => (typeof p === 'string' ? enc.encode(p) : p));
  const out = new Uint8Array(chunks.reduce((a, c) => a + 4 + c.length, 0));
  let at = 0;
  for (const c of chunks) { new DataView(out.buffer).setUint32(at, c.length); out.set(c, at + 4); at += 4 + c.length; }
  return toBig(new Uint8Array(await crypto.subtle.digest('SHA-512', out))) % n;
}
window.encryptThresholdVote = async function (jointKey, plain) {
  const PROPOSAL = ${JSON.stringify(proposalId)};
  const Y = P.fromBytes(jointKey);
  const r = scalar(), k = scalar();
  const R = G.multiply(r), Rb = R.toBytes();
  const c = await challenge(['proof-exchange/governance/ballot-pok/v1', PROPOSAL, Rb, G.multiply(k).toBytes()]);
  const z = (k + c * r) % n;
  const ikm = await crypto.subtle.importKey('raw', Y.multiply(r).toBytes(), 'HKDF', false, ['deriveKey']);
  const salt = new Uint8Array(64); salt.set(Rb, 0); salt.set(jointKey, 32);
  const key = await crypto.subtle.deriveKey(
    { name: 'HKDF', hash: 'SHA-256', salt, info: enc.encode('proof-exchange/governance/vote/v2\\n' + PROPOSAL) },
    ikm, { name: 'AES-GCM', length: 256 }, false, ['encrypt']);
  const nonce = crypto.getRandomValues(new Uint8Array(12));
  const body = new Uint8Array(await crypto.subtle.encrypt(
    { name: 'AES-GCM', iv: nonce, additionalData: enc.encode(PROPOSAL) }, key, plain));
  const out = new Uint8Array(108 + body.length);
  out.set(Rb, 0); out.set(be32(c), 32); out.set(be32(z), 64); out.set(nonce, 96); out.set(body, 108);
  return out;
};
</script>`;

/**
 * Counts the time remaining down in the browser, from what the server rendered (so the visitor's clock
 * does not matter), and says what happens when it reaches zero.
 */
const countdown = (nonce: string) => `<script nonce="${nonce}">
(function () {
  var el = document.getElementById('time-remaining');
  if (!el) return;
  var units = { d: 86400, h: 3600, min: 60, s: 1 };
  var left = 0, re = /(\\d+) (d|h|min|s)\\b/g, m;
  while ((m = re.exec(el.textContent))) left += Number(m[1]) * units[m[2]];
  var end = Date.now() + left * 1000;
  var format = function (s) {
    var d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), mi = Math.floor((s % 3600) / 60);
    return [d ? d + ' d' : '', h ? h + ' h' : '', mi ? mi + ' min' : '', (s % 60) + ' s'].filter(Boolean).join(' ');
  };
  var timer = setInterval(tick, 1000);
  function tick() {
    var s = Math.max(0, Math.ceil((end - Date.now()) / 1000));
    el.textContent = format(s);
    if (s === 0) {
      clearInterval(timer);
      var next = document.getElementById('next');
      if (next) next.textContent = 'The vote has closed. Reload this page for the tally.';
    }
  }
})();
</script>`;

export const ballotForm = (
  proposalId: string,
  options: readonly string[],
  scheme: 'service' | 'threshold',
  nonce: string,
): string => `<h2>Vote in this browser</h2>
<form id="vote-form">
<label for="identity-file">Your identity: the file <code>npm run ballot -- identity</code> wrote (read in this page, never sent)</label><br>
<input type="file" id="identity-file" accept="application/json,.json">
<details id="identity-paste"><summary>or paste it</summary>
<textarea id="identity" autocomplete="off" spellcheck="false" aria-label="Your identity, pasted"></textarea>
<p>Pasted text is cleared from the page as soon as it is read.</p></details>
<fieldset id="choices"><legend>Your choice</legend>
${options
  .map(
    (o, i) =>
      `<label class="choice"><input type="radio" name="choice" id="choice-${i}" value="${escapeHtml(o)}" required> ${escapeHtml(o)}</label>`,
  )
  .join('\n')}
</fieldset>
<button type="submit">Prove and vote</button>
</form>
<p id="vote-status" role="status"></p>
<p><a id="receipt-download" hidden>Download the receipt</a></p>
<pre id="receipt" class="hash"></pre>
<script src="/circuits/snarkjs.min.js" nonce="${nonce}"></script>
${scheme === 'threshold' ? thresholdModule(proposalId, nonce) : ''}
<script nonce="${nonce}">
(function () {
  var PROPOSAL = ${JSON.stringify(proposalId)};
  var OPTIONS = ${JSON.stringify(options).replace(/</g, '\\u003c')};
  var $ = function (id) { return document.getElementById(id); };
  var enc = new TextEncoder();
  var b64u = function (bytes) {
    var s = ''; for (var i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i]);
    return btoa(s).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
  };
  var fromB64u = function (s) {
    return Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), function (c) { return c.charCodeAt(0); });
  };
  var hex = function (buf) {
    return Array.from(new Uint8Array(buf), function (b) { return b.toString(16).padStart(2, '0'); }).join('');
  };
  async function encryptVote(recipient, choice, scheme) {
    var bytes = enc.encode(choice);
    if (!bytes.length || bytes.length > ${VOTE_PLAINTEXT_BYTES - 2}) throw new Error('A choice is 1 to 200 characters.');
    var plain = new Uint8Array(${VOTE_PLAINTEXT_BYTES});
    plain[0] = bytes.length >> 8; plain[1] = bytes.length & 255; plain.set(bytes, 2);
    if (scheme === 'threshold') return window.encryptThresholdVote(recipient, plain);
    var eph = await crypto.subtle.generateKey({ name: 'X25519' }, true, ['deriveBits']);
    var ephRaw = new Uint8Array(await crypto.subtle.exportKey('raw', eph.publicKey));
    var them = await crypto.subtle.importKey('raw', recipient, { name: 'X25519' }, false, []);
    var shared = await crypto.subtle.deriveBits({ name: 'X25519', public: them }, eph.privateKey, 256);
    var ikm = await crypto.subtle.importKey('raw', shared, 'HKDF', false, ['deriveKey']);
    var salt = new Uint8Array(64); salt.set(ephRaw, 0); salt.set(recipient, 32);
    var key = await crypto.subtle.deriveKey(
      { name: 'HKDF', hash: 'SHA-256', salt: salt, info: enc.encode('proof-exchange/governance/vote/v1\\n' + PROPOSAL) },
      ikm, { name: 'AES-GCM', length: 256 }, false, ['encrypt']);
    var nonce = crypto.getRandomValues(new Uint8Array(12));
    var body = new Uint8Array(await crypto.subtle.encrypt(
      { name: 'AES-GCM', iv: nonce, additionalData: enc.encode(PROPOSAL) }, key, plain));
    var out = new Uint8Array(44 + body.length);
    out.set(ephRaw, 0); out.set(nonce, 32); out.set(body, 44);
    return out;
  }
  async function getJson(path) {
    var res = await fetch(path, { headers: { accept: 'application/json' } });
    var body = await res.json();
    if (!res.ok) throw new Error(body.code + ': ' + body.detail);
    return body;
  }
  // The identity, once read: kept in this script only, never shown again (a pasted one is cleared).
  var identity = null;
  $('identity-file').addEventListener('change', async function () {
    var file = this.files && this.files[0];
    identity = null;
    if (file) identity = JSON.parse(await file.text());
  });
  function readIdentity() {
    var pasted = $('identity').value.trim();
    if (pasted) {
      $('identity').value = '';
      identity = JSON.parse(pasted);
    }
    if (!identity || identity.secret === undefined || identity.commitment === undefined)
      throw new Error('Give your identity file (or paste it).');
    return identity;
  }
  $('vote-form').addEventListener('submit', async function (e) {
    e.preventDefault();
    var status = $('vote-status');
    var download = $('receipt-download');
    $('receipt').textContent = '';
    download.hidden = true;
    status.textContent = 'Proving on this device…';
    try {
      var picked = document.querySelector('input[name="choice"]:checked');
      var choice = picked ? picked.value : '';
      // A vote that is none of the options would only be counted as spoiled: none is made.
      if (OPTIONS.indexOf(choice) < 0) throw new Error('Choose one of the options.');
      var identity = readIdentity();
      var key = await getJson('/api/governance/proposals/' + PROPOSAL + '/ballot-key');
      var tree = await getJson('/api/governance/rooms/' + key.roomId + '/tree?levels=true');
      var index = tree.identityCommitments.indexOf(String(identity.commitment));
      if (index < 0) throw new Error('This identity is not in the room’s member list.');
      var path = [], pos = index;
      for (var d = 0; d < tree.depth; d++) { path.push(tree.levels[d][pos ^ 1] || tree.zeros[d]); pos >>= 1; }
      var ciphertext = await encryptVote(fromB64u(key.publicKey), choice, key.scheme);
      var voteHash = (BigInt('0x' + hex(await crypto.subtle.digest('SHA-256', ciphertext))) >> 8n).toString();
      var proved = await snarkjs.groth16.fullProve(
        { identitySecret: String(identity.secret), pathElements: path, pathIndex: String(index), scope: key.scope, voteHash: voteHash },
        '/circuits/${BALLOT_CIRCUIT}.wasm', '/circuits/${BALLOT_CIRCUIT}.zkey', undefined, undefined, { singleThread: true });
      var p = proved.proof;
      var res = await fetch('/api/governance/proposals/' + PROPOSAL + '/ballots', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ root: proved.publicSignals[0], nullifier: proved.publicSignals[1],
          ciphertext: b64u(ciphertext), proof: { pi_a: p.pi_a, pi_b: p.pi_b, pi_c: p.pi_c } })
      });
      var receipt = await res.json();
      if (res.status !== 201) throw new Error(receipt.code + ': ' + receipt.detail);
      $('receipt').textContent = JSON.stringify(receipt, null, 2);
      download.href = URL.createObjectURL(new Blob([JSON.stringify(receipt, null, 2) + '\\n'], { type: 'application/json' }));
      download.download = 'ballot-receipt-' + PROPOSAL + '.json';
      download.hidden = false;
      status.textContent = 'Cast. Keep this receipt: it proves your ballot is counted once the vote closes.';
    } catch (err) {
      status.textContent = 'Not cast: ' + (err && err.message ? err.message : String(err));
    }
  });
})();
</script>
${countdown(nonce)}`;
