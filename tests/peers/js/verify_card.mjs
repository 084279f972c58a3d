// Verifies an Agent Card's signatures with the OFFICIAL A2A JS SDK (@a2a-js/sdk 1.3.0,
// verifyAgentCardSignature), for the integration tests of the gateway's own card signatures.
//
// Usage:
//   node verify_card.mjs (--url CARD_URL | --card-file F) (--jwks F | --jku-origin ORIGIN)
//
//   --url CARD_URL     fetch the card (with A2A-Version: 1.0, as the SDK client does) and verify it
//   --card-file F      verify the card in F (JSON)
//   --jwks F           trusted keys: the key with the signature's kid from this JWK Set
//   --jku-origin O     fetch the JWK Set the signature's jku names, only when it is under origin O
//
// Output: one JSON line, {"ok":true,"kid":K,"jku":J} or {"ok":false,"error":MESSAGE}; exit 0 / 1.
import { readFileSync } from 'node:fs';
import { verifyAgentCardSignature } from '@a2a-js/sdk';

// The SDK reports each failed signature with console.debug; stdout is for the result line.
console.debug = (...a) => console.error(...a);

const opts = {};
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i += 2) opts[argv[i].replace(/^--/, '')] = argv[i + 1];

async function main() {
  let card;
  if (opts.url) {
    const resp = await fetch(opts.url, { headers: { 'A2A-Version': '1.0' } });
    if (!resp.ok) throw new Error(`card fetch: HTTP ${resp.status}`);
    card = await resp.json();
  } else {
    card = JSON.parse(readFileSync(opts['card-file'], 'utf8'));
  }
  let used = {};
  const retrievePublicKey = async (kid, jku) => {
    let set;
    if (opts.jwks) {
      set = JSON.parse(readFileSync(opts.jwks, 'utf8'));
    } else {
      if (!jku || new URL(jku).origin !== new URL(opts['jku-origin']).origin) {
        throw new Error(`jku ${jku} is not under the trusted origin`);
      }
      const resp = await fetch(jku);
      if (!resp.ok) throw new Error(`jwks fetch: HTTP ${resp.status}`);
      set = await resp.json();
    }
    const key = (set.keys || []).find((k) => k.kid === kid);
    if (!key) throw new Error(`no trusted key ${kid}`);
    used = { kid, jku };
    return key;
  };
  await verifyAgentCardSignature(retrievePublicKey)(card);
  return used;
}

main().then(
  (used) => { console.log(JSON.stringify({ ok: true, ...used })); process.exit(0); },
  (e) => { console.log(JSON.stringify({ ok: false, error: String(e && e.message || e) })); process.exit(1); },
);
