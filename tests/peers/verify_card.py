"""Verifies an Agent Card's signatures with the OFFICIAL Python a2a-sdk 1.3.0 verifier
(a2a.utils.signing.create_signature_verifier), for the integration tests of the gateway's own
card signatures.

Usage:
  python verify_card.py (--url BASE | --card-file F) (--jwks F | --jku-origin ORIGIN)

  --url BASE        the SDK's A2ACardResolver fetches BASE/.well-known/agent-card.json and runs
                    the verifier on it, as a client that requires signed cards does
  --card-file F     parse the card in F as the SDK does (parse_agent_card) and verify it
  --jwks F          trusted keys: the key with the signature's kid from this JWK Set
  --jku-origin O    fetch the JWK Set the signature's jku names, only when it is under origin O

Output: one JSON line, {"ok": true, "kid": K, "jku": J} or {"ok": false, "error": ..., "type":
...}; exit 0 / 1.
"""

import argparse
import asyncio
import json
import sys
from urllib.parse import urlsplit

import httpx
from jwt import PyJWK

from a2a.client import A2ACardResolver
from a2a.client.card_resolver import parse_agent_card
from a2a.utils.signing import create_signature_verifier

ALGORITHMS = ['ES256', 'EdDSA']


def origin(url):
    u = urlsplit(url)
    return f'{u.scheme}://{u.netloc}'


async def main():
    p = argparse.ArgumentParser()
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument('--url')
    src.add_argument('--card-file')
    keys = p.add_mutually_exclusive_group(required=True)
    keys.add_argument('--jwks')
    keys.add_argument('--jku-origin')
    args = p.parse_args()

    used = {}
    # Loopback only; never a proxy from the environment.
    async with httpx.AsyncClient(trust_env=False, headers={'A2A-Version': '1.0'}) as http:
        jwks_cache = {}
        if args.jwks:
            with open(args.jwks) as f:
                jwks_cache[None] = json.load(f)

        def key_provider(kid, jku):
            if args.jku_origin:
                if not jku or origin(jku) != origin(args.jku_origin):
                    raise ValueError(f'jku {jku} is not under the trusted origin')
                if jku not in jwks_cache:
                    # The verifier calls the provider synchronously; fetch with a sync client.
                    with httpx.Client(trust_env=False) as c:
                        r = c.get(jku)
                        r.raise_for_status()
                        jwks_cache[jku] = r.json()
                doc = jwks_cache[jku]
            else:
                doc = jwks_cache[None]
            for k in doc.get('keys', []):
                if k.get('kid') == kid:
                    used.update(kid=kid, jku=jku)
                    return PyJWK(k)
            raise ValueError(f'no trusted key {kid}')

        verifier = create_signature_verifier(key_provider, ALGORITHMS)
        try:
            if args.url:
                await A2ACardResolver(http, args.url).get_agent_card(signature_verifier=verifier)
            else:
                with open(args.card_file) as f:
                    verifier(parse_agent_card(json.load(f)))
        except Exception as e:  # noqa: BLE001 - the test reads the type
            print(json.dumps({'ok': False, 'type': type(e).__name__, 'error': str(e)}))
            return 1
    print(json.dumps({'ok': True, **used}))
    return 0


if __name__ == '__main__':
    sys.exit(asyncio.run(main()))
