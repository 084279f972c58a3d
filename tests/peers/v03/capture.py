"""Records what the official A2A **0.3** SDK agents put on the wire, into tests/fixtures/wire/v03/.

Run with the 0.3 venv (it imports a2a-sdk 0.3.26 and starts its own agent from it) from the
repository root, after `npm ci` in tests/peers/js03 (the JS @a2a-js/sdk 0.3.14 agent):

    .venv03/bin/python tests/peers/v03/capture.py [--out tests/fixtures/wire/v03]

Two peers, each on both bindings: `python` (a2a-sdk 0.3.26: its Starlette JSON-RPC app and its
FastAPI REST app, mounted here, with an in-memory push-config store and the authenticated
extended card) and `js` (tests/peers/js03/agent.mjs, started as a child process). Each peer also
runs a twin whose card says `streaming: false`, for the refusal of message/stream.

Every exchange is one file `<peer>-<binding>-<exchange>.json`:

    {"peer", "binding", "exchange",
     "request":  {"method", "path", "body"},
     "response": {"status", "content_type", "body" | "text" | "events"}}

`body` is the answer parsed as JSON, `text` the answer when it is not JSON, and `events` an SSE
stream as sent: one list per event of its raw `data:` lines (so a multi-line event stays visible).
Ids and timestamps are whatever the agents chose; the loopback port is written `PORT`. Reads are
bounded (a stream stops after MAX_EVENTS events, MAX_SSE_LINES lines of any kind, or READ_TIMEOUT
seconds of silence), every call by the wall clock (CALL_DEADLINE) and so is the whole run
(RUN_DEADLINE): the script fails rather than hangs. The captures are written to a temporary
directory beside `--out` and moved in only when every exchange was recorded, so a failed run
leaves the committed files as they were. The JS agents exit when this script's end of their stdin
closes, however it ends.
"""

import argparse
import asyncio
import json
import pathlib
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.routing import Mount

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2ARESTFastAPIApplication, A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import (
    BasePushNotificationSender,
    InMemoryPushNotificationConfigStore,
    InMemoryTaskStore,
    TaskUpdater,
)
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    TaskState,
    TextPart,
)
from a2a.utils import new_agent_text_message, new_task

ROOT = pathlib.Path(__file__).resolve().parents[3]
MAX_EVENTS = 20
# SSE lines of any kind (comments and pings too) read from one stream before it is cut.
MAX_SSE_LINES = 2000
READ_TIMEOUT = 10.0
# Wall-clock bounds: one exchange (above READ_TIMEOUT, so a quiet stream still ends on its own),
# a JS agent's start, and the whole run.
CALL_DEADLINE = 30.0
START_DEADLINE = 30.0
RUN_DEADLINE = 240.0
# Longest a held task waits for its cancel before finishing on its own.
HOLD_SECONDS = 60
TICK = 0.5
PUSH_URL = 'http://127.0.0.1:9/push'


class Executor(AgentExecutor):
    """The same behaviour as tests/peers/js03/agent.mjs: "message…" answers a Message, "hold…"
    leaves a task working until it is cancelled, anything else completes a task with an artifact."""

    def __init__(self):
        self.held = {}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        if text.startswith('message'):
            await event_queue.enqueue_event(new_agent_text_message(text, context.context_id))
            return
        task = context.current_task or new_task(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        if text.startswith('hold'):
            # A `working` update every TICK seconds until cancelled: the Python SDK's resubscribe
            # replays nothing, so these are what a resubscribed stream shows.
            done = self.held.setdefault(task.id, asyncio.Event())
            for _ in range(int(HOLD_SECONDS / TICK)):
                try:
                    await asyncio.wait_for(done.wait(), TICK)
                    return
                except asyncio.TimeoutError:
                    await updater.update_status(TaskState.working)
            await updater.complete()
            return
        await updater.add_artifact([Part(root=TextPart(text=text))], artifact_id='echo')
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.cancel()
        self.held.setdefault(task.id, asyncio.Event()).set()


def python_card(base, streaming):
    return AgentCard(
        name='SDK 0.3 capture agent',
        description='Built from the official a2a-sdk 0.3.26 for the wire captures',
        url=base + '/jsonrpc',
        preferred_transport='JSONRPC',
        additional_interfaces=[AgentInterface(url=base + '/jsonrpc', transport='JSONRPC'),
                               AgentInterface(url=base + '/rest', transport='HTTP+JSON')],
        protocol_version='0.3.0',
        version='0.3.26',
        capabilities=AgentCapabilities(streaming=streaming, push_notifications=True),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain'],
        skills=[AgentSkill(id='echo', name='Echo', description='echoes the text it is sent',
                           tags=['demo'])],
        supports_authenticated_extended_card=True,
    )


def python_routes(base, streaming, client):
    """One Python agent on both bindings: JSON-RPC at /jsonrpc, REST at /rest, the card."""
    card = python_card(base, streaming)
    extended = card.model_copy(update={'name': card.name + ' (extended)'})
    store = InMemoryPushNotificationConfigStore()
    handler = DefaultRequestHandler(
        agent_executor=Executor(), task_store=InMemoryTaskStore(),
        push_config_store=store, push_sender=BasePushNotificationSender(client, store))
    rpc = A2AStarletteApplication(agent_card=card, http_handler=handler,
                                  extended_agent_card=extended)
    rest = A2ARESTFastAPIApplication(agent_card=card, http_handler=handler,
                                     extended_agent_card=extended).build()
    return rpc.routes(rpc_url='/jsonrpc') + [Mount('/rest', app=rest)]


def python_app(base):
    """Two Python agents: streaming at /, not streaming at /nostream."""
    client = httpx.AsyncClient(timeout=2.0)
    nostream = Mount('/nostream', routes=python_routes(base + '/nostream', False, client))
    return Starlette(routes=[nostream] + python_routes(base, True, client))


def start_python():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(('127.0.0.1', 0))
    sock.listen(128)
    base = f'http://127.0.0.1:{sock.getsockname()[1]}'
    server = uvicorn.Server(uvicorn.Config(python_app(base), log_level='critical', lifespan='off'))
    threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True).start()
    return base, server


def start_js(started, *args):
    """Starts the JS agent (appended to `started` at once, so the caller's `finally` stops it
    whatever happens next) and returns its base URL. Its stdout is drained after the first line
    by a thread: the SDK's `console.info` writes there, and a full pipe would block the agent."""
    proc = subprocess.Popen(['node', 'agent.mjs', '--exit-on-stdin-eof', *args],
                            cwd=ROOT / 'tests/peers/js03', stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    started.append(proc)
    first = queue.Queue(maxsize=1)

    def drain():
        first.put(proc.stdout.readline())
        for _ in proc.stdout:
            pass

    threading.Thread(target=drain, daemon=True).start()
    try:
        line = first.get(timeout=START_DEADLINE)
    except queue.Empty:
        raise SystemExit(f'the JS agent printed nothing within {START_DEADLINE} s')
    if not line:
        raise SystemExit('the JS agent did not start (npm ci in tests/peers/js03?)')
    return json.loads(line)['card_url'].removesuffix('/.well-known/agent-card.json')


def stop_js(proc):
    """Closes the agent's stdin (it exits on EOF), then terminates, then kills it."""
    try:
        proc.stdin.close()
    except OSError:
        pass
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


class Deadline(Exception):
    """A call, or the whole run, took longer than its wall-clock bound."""


class wall_clock:
    """Raises Deadline in the main thread after `seconds` (SIGALRM interrupts a blocked read,
    which httpx's per-read timeout alone does not bound: a server trickling bytes resets it)."""

    def __init__(self, seconds, what):
        self.seconds, self.what = seconds, what

    def __enter__(self):
        def expired(_sig, _frame):
            raise Deadline(f'{self.what}: no answer within {self.seconds:.1f} s')

        self.previous = signal.signal(signal.SIGALRM, expired)
        signal.setitimer(signal.ITIMER_REAL, max(self.seconds, 0.001))
        return self

    def __exit__(self, *exc):
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.previous)
        return False


def read_sse(resp):
    """Yields the SSE stream's events, each the list of its raw `data:` lines; ends with the
    stream, after READ_TIMEOUT seconds without a byte (httpx's read timeout), or after
    MAX_SSE_LINES lines of any kind (a stream of comments or pings counts too)."""
    current = []
    try:
        for n, line in enumerate(resp.iter_lines()):
            if n >= MAX_SSE_LINES:
                raise Deadline(f'more than {MAX_SSE_LINES} SSE lines')
            if line.startswith('data:'):
                current.append(line)
            elif line == '' and current:
                yield current
                current = []
    except httpx.ReadTimeout:
        return
    if current:
        yield current


class Recorder:
    def __init__(self, out, ports, run_deadline):
        self.out = out
        self.ports = ports
        self.http = httpx.Client(timeout=httpx.Timeout(READ_TIMEOUT))
        self.written = []
        self.run_deadline = run_deadline

    def scrub(self, text):
        for p in self.ports:
            text = text.replace(f'127.0.0.1:{p}', '127.0.0.1:PORT')
        return text

    def call(self, peer, binding, exchange, method, url, body=None, stream=False,
             max_events=MAX_EVENTS):
        """One request, recorded; returns the answer's JSON (or the stream's events parsed).
        A stream is read to its end or `max_events` events (a held task's never ends)."""
        base_path = httpx.URL(url).raw_path.decode()
        req = {'method': method, 'path': self.scrub(base_path)}
        if body is not None:
            req['body'] = body
        kwargs = {'json': body} if body is not None else {}
        left = self.run_deadline - time.monotonic()
        if left <= 0:
            raise Deadline(f'the whole run took longer than {RUN_DEADLINE} s')
        what = f'{peer}-{binding}-{exchange}'
        with wall_clock(min(CALL_DEADLINE, left), what), \
                self.http.stream(method, url, **kwargs) as resp:
            ctype = resp.headers.get('content-type', '')
            answer = {'status': resp.status_code, 'content_type': ctype}
            parsed = None
            if stream and ctype.startswith('text/event-stream'):
                events = []
                for ev in read_sse(resp):
                    events.append(ev)
                    if len(events) >= max_events:
                        break
                answer['events'] = [[self.scrub(l) for l in ev] for ev in events]
                parsed = [json.loads(''.join(l[5:].strip() for l in ev)) for ev in events]
            else:
                raw = resp.read().decode('utf-8', 'replace')
                try:
                    parsed = json.loads(raw) if raw else None
                    answer['body'] = json.loads(self.scrub(raw)) if raw else None
                except ValueError:
                    answer['text'] = self.scrub(raw)
        rec = {'peer': peer, 'binding': binding, 'exchange': exchange,
               'request': json.loads(self.scrub(json.dumps(req))), 'response': answer}
        name = f'{peer}-{binding}-{exchange}.json'
        (self.out / name).write_text(json.dumps(rec, indent=2, ensure_ascii=False) + '\n')
        self.written.append(name)
        return parsed


def rpc_body(n, method, params):
    return {'jsonrpc': '2.0', 'id': n, 'method': method, 'params': params}


def rpc_message(text, n, task_id=None):
    m = {'kind': 'message', 'messageId': f'm-{n}', 'role': 'user',
         'parts': [{'kind': 'text', 'text': text}]}
    if task_id:
        m['taskId'] = task_id
    return m


def rest_message(text, n):
    return {'messageId': f'm-{n}', 'role': 'ROLE_USER', 'content': [{'text': text}]}


def capture_jsonrpc(rec, peer, base, nostream_base):
    url = base + '/jsonrpc'
    b = 'jsonrpc'
    res = rec.call(peer, b, 'send', 'POST', url,
                   rpc_body(1, 'message/send', {'message': rpc_message('hi', 1)}))
    task_id = res['result']['id']
    rec.call(peer, b, 'send-message-result', 'POST', url,
             rpc_body(2, 'message/send', {'message': rpc_message('message please', 2)}))
    rec.call(peer, b, 'stream', 'POST', url,
             rpc_body(3, 'message/stream', {'message': rpc_message('stream me', 3)}), stream=True)
    rec.call(peer, b, 'get', 'POST', url, rpc_body(4, 'tasks/get', {'id': task_id}))
    rec.call(peer, b, 'get-unknown-task', 'POST', url,
             rpc_body(5, 'tasks/get', {'id': 'no-such-task'}))
    held = rec.call(peer, b, 'send-non-blocking', 'POST', url, rpc_body(
        6, 'message/send', {'message': rpc_message('hold on', 6),
                            'configuration': {'blocking': False}}))['result']['id']
    cfg = {'taskId': held, 'pushNotificationConfig': {'id': 'c1', 'url': PUSH_URL}}
    rec.call(peer, b, 'push-set', 'POST', url,
             rpc_body(8, 'tasks/pushNotificationConfig/set', cfg))
    rec.call(peer, b, 'push-get', 'POST', url, rpc_body(
        9, 'tasks/pushNotificationConfig/get', {'id': held, 'pushNotificationConfigId': 'c1'}))
    rec.call(peer, b, 'push-list', 'POST', url,
             rpc_body(10, 'tasks/pushNotificationConfig/list', {'id': held}))
    rec.call(peer, b, 'push-delete', 'POST', url, rpc_body(
        11, 'tasks/pushNotificationConfig/delete', {'id': held, 'pushNotificationConfigId': 'c1'}))
    rec.call(peer, b, 'resubscribe', 'POST', url, rpc_body(7, 'tasks/resubscribe', {'id': held}),
             stream=True, max_events=1)
    rec.call(peer, b, 'cancel', 'POST', url, rpc_body(12, 'tasks/cancel', {'id': held}))
    rec.call(peer, b, 'extended-card', 'POST', url,
             rpc_body(13, 'agent/getAuthenticatedExtendedCard', {}))
    rec.call(peer, b, 'stream-refused', 'POST', nostream_base + '/jsonrpc',
             rpc_body(14, 'message/stream', {'message': rpc_message('stream me', 14)}),
             stream=True)


def capture_rest(rec, peer, base, nostream_base):
    url = base + '/rest/v1'
    b = 'rest'
    res = rec.call(peer, b, 'send', 'POST', url + '/message:send',
                   {'message': rest_message('hi', 1), 'configuration': {'blocking': True}})
    task_id = res['task']['id']
    rec.call(peer, b, 'send-message-result', 'POST', url + '/message:send',
             {'message': rest_message('message please', 2)})
    rec.call(peer, b, 'send-no-blocking-field', 'POST', url + '/message:send',
             {'message': rest_message('hi again', 3)})
    rec.call(peer, b, 'stream', 'POST', url + '/message:stream',
             {'message': rest_message('stream me', 4)}, stream=True)
    rec.call(peer, b, 'get', 'GET', f'{url}/tasks/{task_id}')
    rec.call(peer, b, 'get-unknown-task', 'GET', f'{url}/tasks/no-such-task')
    held = rec.call(peer, b, 'send-non-blocking', 'POST', url + '/message:send',
                    {'message': rest_message('hold on', 5),
                     'configuration': {'blocking': False}})['task']['id']
    cfg = {'parent': f'tasks/{held}', 'configId': 'c1',
           'config': {'name': f'tasks/{held}/pushNotificationConfigs/c1',
                      'pushNotificationConfig': {'id': 'c1', 'url': PUSH_URL}}}
    rec.call(peer, b, 'push-set', 'POST', f'{url}/tasks/{held}/pushNotificationConfigs', cfg)
    rec.call(peer, b, 'push-get', 'GET', f'{url}/tasks/{held}/pushNotificationConfigs/c1')
    rec.call(peer, b, 'push-list', 'GET', f'{url}/tasks/{held}/pushNotificationConfigs')
    rec.call(peer, b, 'push-delete', 'DELETE', f'{url}/tasks/{held}/pushNotificationConfigs/c1')
    rec.call(peer, b, 'resubscribe', 'GET', f'{url}/tasks/{held}:subscribe', stream=True,
             max_events=1)
    rec.call(peer, b, 'cancel', 'POST', f'{url}/tasks/{held}:cancel')
    rec.call(peer, b, 'extended-card', 'GET', url + '/card')
    rec.call(peer, b, 'stream-refused', 'POST', nostream_base + '/rest/v1/message:stream',
             {'message': rest_message('stream me', 6)}, stream=True)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--out', default=str(ROOT / 'tests/fixtures/wire/v03'))
    args = p.parse_args(argv)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    run_deadline = time.monotonic() + RUN_DEADLINE
    # Recorded beside `out` and swapped in only on success: a run that fails (a peer that does
    # not start, an exchange past its deadline) leaves the committed captures untouched.
    tmp = pathlib.Path(tempfile.mkdtemp(prefix='.capture-', dir=out.parent))
    started = []
    server = None
    try:
        py_base, server = start_python()
        js_base = start_js(started)
        js_nostream_base = start_js(started, '--no-streaming')
        ports = [httpx.URL(u).port for u in (py_base, js_base, js_nostream_base)]
        rec = Recorder(tmp, ports, run_deadline)
        # The socket listens before the server starts, so this first request waits in its
        # backlog until the server takes it (bounded by the wall clock): no polling.
        with wall_clock(10, 'the Python agent\'s card'):
            rec.http.get(py_base + '/.well-known/agent-card.json').raise_for_status()
        for peer, base, nostream in (('python', py_base, py_base + '/nostream'),
                                     ('js', js_base, js_nostream_base)):
            capture_jsonrpc(rec, peer, base, nostream)
            capture_rest(rec, peer, base, nostream)
        for old in out.glob('*.json'):
            old.unlink()
        for new in tmp.glob('*.json'):
            new.replace(out / new.name)
        print(f'{len(rec.written)} exchanges written to {out}')
    finally:
        for proc in started:
            stop_js(proc)
        if server is not None:
            server.should_exit = True
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    main(sys.argv[1:])
