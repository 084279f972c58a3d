# Writes the translate_grpc seeds (fuzz/corpus/translate_grpc) with the Python a2a-sdk 1.3.0 generated
# types:  .venv/bin/python fuzz/seeds/translate_grpc.py fuzz/corpus/translate_grpc
import json, sys, os
from a2a.types import a2a_pb2 as pb
from google.rpc import status_pb2, error_details_pb2
from google.protobuf import any_pb2
out = sys.argv[1]
ops = ['SendMessage','SendStreamingMessage','GetTask','ListTasks','CancelTask','SubscribeToTask',
       'CreateTaskPushNotificationConfig','GetTaskPushNotificationConfig','ListTaskPushNotificationConfigs',
       'DeleteTaskPushNotificationConfig','GetExtendedAgentCard']
def pick(op, d): return bytes([ops.index(op)*3 + d])
def w(name, b):
    open(os.path.join(out, name), 'wb').write(b)
task = pb.Task(id='t-1', context_id='c-1', status=pb.TaskStatus(state=pb.TASK_STATE_COMPLETED),
    artifacts=[pb.Artifact(artifact_id='a-1', parts=[pb.Part(text='héllo \u202e')])],
    history=[pb.Message(message_id='m-1', role=pb.ROLE_USER, parts=[pb.Part(text='hi')])])
task.status.timestamp.GetCurrentTime()
w('answer-send-task', pick('SendMessage',1) + pb.SendMessageResponse(task=task).SerializeToString())
w('answer-send-message', pick('SendMessage',1) + pb.SendMessageResponse(message=pb.Message(message_id='m', role=pb.ROLE_AGENT, parts=[pb.Part(text='x')])).SerializeToString())
w('answer-stream-status', pick('SendStreamingMessage',1) + pb.StreamResponse(status_update=pb.TaskStatusUpdateEvent(task_id='t', context_id='c', status=pb.TaskStatus(state=pb.TASK_STATE_WORKING))).SerializeToString())
w('answer-stream-artifact', pick('SubscribeToTask',1) + pb.StreamResponse(artifact_update=pb.TaskArtifactUpdateEvent(task_id='t', artifact=pb.Artifact(artifact_id='a', parts=[pb.Part(raw=b'\x00\xff', media_type='application/octet-stream')]))).SerializeToString())
w('answer-get-task', pick('GetTask',1) + task.SerializeToString())
w('answer-list-tasks', pick('ListTasks',1) + pb.ListTasksResponse(tasks=[task], next_page_token='n').SerializeToString())
cfg = pb.TaskPushNotificationConfig(task_id='t', id='p', url='https://hook.example/x', token='tok')
w('answer-push-config', pick('GetTaskPushNotificationConfig',1) + cfg.SerializeToString())
w('answer-delete', pick('DeleteTaskPushNotificationConfig',1))
card = pb.AgentCard(name='n', description='d', version='1', supported_interfaces=[pb.AgentInterface(url='https://a', protocol_binding='GRPC', protocol_version='1.0')])
w('answer-card', pick('GetExtendedAgentCard',1) + card.SerializeToString())
info = error_details_pb2.ErrorInfo(reason='TASK_NOT_FOUND', domain='a2a-protocol.org', metadata={'taskId':'t'})
a = any_pb2.Any(); a.Pack(info)
st = status_pb2.Status(code=5, message='nope', details=[a])
w('status-task-not-found', pick('GetTask',2) + bytes([5]) + st.SerializeToString())
w('status-empty', pick('GetTask',2) + bytes([13]))
for op, params in [('SendMessage', {"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"},{"data":{"k":[1,2]}}]},"configuration":{"returnImmediately":True}}),
                   ('GetTask', {"id":"t","historyLength":2}), ('ListTasks', {"contextId":"c","status":"TASK_STATE_WORKING","pageSize":5}),
                   ('CreateTaskPushNotificationConfig', {"taskId":"t","url":"https://h/x","token":"x"}), ('CancelTask', {"id":"t"})]:
    w('request-' + op, pick(op,0) + json.dumps({"jsonrpc":"2.0","id":1,"method":op,"params":params}).encode())
