"""A small A2A 0.3 test agent built only from the official Python `a2a-sdk` 0.3.26.

Used by the Rust integration tests (tests/integration/common/sdk_agent.rs, `SdkAgent::start_v03`)
as a real 0.3 peer: it binds 127.0.0.1:0 itself and prints ONE JSON line on stdout before serving:

    {"event":"listening","addr":"127.0.0.1:PORT","card_url":"http://127.0.0.1:PORT/.well-known/agent-card.json"}

The card is the SDK's own 0.3 `AgentCard` (top-level `url`, `preferredTransport`,
`additionalInterfaces`, `protocolVersion` "0.3.0"), served by the SDK's app on its well-known
route. `--transport` picks the main interface: `jsonrpc` serves JSON-RPC at `/jsonrpc` (the SDK's
Starlette app), `rest` serves HTTP+JSON at `/rest` (the SDK's FastAPI app); the other binding is
listed in `additionalInterfaces` only when `--both` is given (and then also served).
"""

import argparse
import json
import os
import socket
import sys
import threading

import uvicorn
from starlette.applications import Starlette
from starlette.routing import Mount

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2ARESTFastAPIApplication, A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from a2a.utils import new_agent_text_message

JSONRPC_PATH = '/jsonrpc'
REST_PATH = '/rest'


class EchoExecutor(AgentExecutor):
    """Answers every message with one agent message echoing its text."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        await event_queue.enqueue_event(new_agent_text_message(context.get_user_input()))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError('cancel is not supported')


def build_card(base, transport, both):
    urls = {'JSONRPC': base + JSONRPC_PATH, 'HTTP+JSON': base + REST_PATH}
    main = 'JSONRPC' if transport == 'jsonrpc' else 'HTTP+JSON'
    others = [t for t in urls if t != main] if both else []
    return AgentCard(
        name='SDK 0.3 echo',
        description='Echo agent built from the official a2a-sdk 0.3.26',
        url=urls[main],
        preferred_transport=main,
        additional_interfaces=[AgentInterface(url=urls[t], transport=t) for t in [main] + others],
        protocol_version='0.3.0',
        version='0.3.26',
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain'],
        skills=[AgentSkill(id='echo', name='Echo', description='echoes the text it is sent',
                           tags=['demo'], input_modes=['text/plain'], output_modes=['text/plain'])],
        supports_authenticated_extended_card=False,
    )


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--transport', choices=['jsonrpc', 'rest'], default='jsonrpc')
    p.add_argument('--both', action='store_true', help='list and serve the other binding too')
    p.add_argument('--exit-on-stdin-eof', action='store_true')
    args = p.parse_args(argv)
    if args.exit_on_stdin_eof:
        threading.Thread(target=lambda: (sys.stdin.buffer.read(), os._exit(0)), daemon=True).start()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(('127.0.0.1', 0))
    # Listen before announcing: connections made right after the line queue in the backlog.
    sock.listen(128)
    port = sock.getsockname()[1]
    base = f'http://127.0.0.1:{port}'
    card = build_card(base, args.transport, args.both)
    handler = DefaultRequestHandler(agent_executor=EchoExecutor(), task_store=InMemoryTaskStore())
    jsonrpc = A2AStarletteApplication(agent_card=card, http_handler=handler)
    routes = []
    # The SDK's apps serve the card on the well-known route; the JSON-RPC app's is the one mounted.
    jsonrpc_routes = jsonrpc.routes(rpc_url=JSONRPC_PATH)
    routes += jsonrpc_routes
    if args.transport == 'rest' or args.both:
        rest = A2ARESTFastAPIApplication(agent_card=card, http_handler=handler).build()
        routes.append(Mount(REST_PATH, app=rest))
    app = Starlette(routes=routes)
    print(json.dumps({'event': 'listening', 'addr': f'127.0.0.1:{port}',
                      'card_url': f'{base}/.well-known/agent-card.json'}), flush=True)
    config = uvicorn.Config(app, log_level='warning', lifespan='off')
    import asyncio
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == '__main__':
    main(sys.argv[1:])
