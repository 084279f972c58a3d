#!/usr/bin/env python3
"""Writes the seed corpus of fuzz/fuzz_targets/translate_binding.rs: for each direction (the first
byte % 6) and a few operations (first byte / 6, an index into Op::ALL), a real request, answer,
error or event of the A2A 1.0 bindings (FACTS §5, §6). Run from the repository root."""
import json, os

OPS = ["SendMessage", "SendStreamingMessage", "GetTask", "ListTasks", "CancelTask",
       "SubscribeToTask", "CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig",
       "ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig", "GetExtendedAgentCard"]
OUT = "fuzz/corpus/translate_binding"
MSG = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "h\u00e9llo \u202e"}]}
INFO = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND",
         "domain": "a2a-protocol.org"}]


def seed(name, direction, op, payload, status=None):
    head = bytes([OPS.index(op) * 6 + direction])
    if status is not None:
        head += bytes([status])
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(head + body)


def rpc(method, params, id_="r1"):
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


os.makedirs(OUT, exist_ok=True)
seed("rpc-send", 0, "SendMessage", rpc("SendMessage", {"tenant": "t 1", "message": MSG}))
seed("rpc-get", 0, "GetTask", rpc("GetTask", {"id": "t\u00e2sk", "historyLength": 2}))
seed("rpc-list", 0, "ListTasks", rpc("ListTasks", {"contextId": "c&1", "includeArtifacts": True}))
seed("rpc-delete", 0, "DeleteTaskPushNotificationConfig",
     rpc("DeleteTaskPushNotificationConfig", {"taskId": "t", "id": "c"}))
seed("rest-send", 1, "SendMessage", {"message": MSG, "metadata": {"n": 1}})
seed("rest-cancel", 1, "CancelTask", {"metadata": {}})
seed("rest-answer-task", 2, "GetTask", {"id": "t", "status": {"state": "TASK_STATE_WORKING"}}, 0)
seed("rest-answer-error", 2, "GetTask",
     {"error": {"code": 404, "status": "NOT_FOUND", "message": "no", "details": INFO}}, 3)
seed("rest-answer-empty", 2, "DeleteTaskPushNotificationConfig", b"", 1)
seed("rpc-answer-result", 3, "GetTask", {"jsonrpc": "2.0", "id": "g", "result": {"id": "t"}}, 0)
seed("rpc-answer-error", 3, "CancelTask",
     {"jsonrpc": "2.0", "id": "g", "error": {"code": -32002, "message": "no"}}, 0)
seed("rest-event", 4, "SendStreamingMessage",
     {"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_WORKING"}}})
seed("rest-event-error", 4, "SubscribeToTask",
     {"error": {"code": 400, "status": "FAILED_PRECONDITION", "message": "m"}})
seed("rpc-event", 5, "SendStreamingMessage",
     {"jsonrpc": "2.0", "id": "g", "result": {"task": {"id": "t"}}})
seed("rpc-event-error", 5, "SendStreamingMessage",
     {"jsonrpc": "2.0", "id": None, "error": {"code": -32004, "message": "m"}})
