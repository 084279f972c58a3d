# Writes the translate_grpc03 seeds (fuzz/corpus/translate_grpc03) with the official a2a-sdk 0.3.26
# generated types:  .venv03/bin/python fuzz/seeds/translate_grpc03.py fuzz/corpus/translate_grpc03
import os, sys
from a2a.grpc import a2a_pb2 as pb
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
ops = ['SendMessage', 'SendStreamingMessage', 'GetTask', 'ListTasks', 'CancelTask', 'SubscribeToTask',
       'CreateTaskPushNotificationConfig', 'GetTaskPushNotificationConfig', 'ListTaskPushNotificationConfigs',
       'DeleteTaskPushNotificationConfig', 'GetExtendedAgentCard']
def pick(op, d): return bytes([ops.index(op) * 5 + d])
def w(name, b): open(os.path.join(out, name), 'wb').write(b)
text = lambda t: pb.Part(text=t)
task = pb.Task(id='t-1', context_id='c-1', status=pb.TaskStatus(state=pb.TASK_STATE_COMPLETED),
               artifacts=[pb.Artifact(artifact_id='a-1', parts=[text('héllo \u202e')])],
               history=[pb.Message(message_id='m-1', role=pb.ROLE_USER, content=[text('hi')])])
w('answer-send-task', pick('SendMessage', 1) + pb.SendMessageResponse(task=task).SerializeToString())
w('answer-send-msg', pick('SendMessage', 1) + pb.SendMessageResponse(
    msg=pb.Message(message_id='m', role=pb.ROLE_AGENT, content=[text('x')])).SerializeToString())
w('answer-get-task', pick('GetTask', 1) + task.SerializeToString())
cfg = pb.TaskPushNotificationConfig(name='tasks/t/pushNotificationConfigs/p',
                                    push_notification_config=pb.PushNotificationConfig(id='p', url='https://h/x', token='tok'))
w('answer-push-config', pick('GetTaskPushNotificationConfig', 1) + cfg.SerializeToString())
w('answer-delete', pick('DeleteTaskPushNotificationConfig', 1))
w('event-status-final', pick('SendStreamingMessage', 2) + pb.StreamResponse(status_update=pb.TaskStatusUpdateEvent(
    task_id='t', context_id='c', status=pb.TaskStatus(state=pb.TASK_STATE_COMPLETED), final=True)).SerializeToString())
w('event-artifact', pick('SubscribeToTask', 2) + pb.StreamResponse(artifact_update=pb.TaskArtifactUpdateEvent(
    task_id='t', artifact=pb.Artifact(artifact_id='a', parts=[pb.Part(file=pb.FilePart(file_with_bytes=b'\x00\xff', mime_type='application/octet-stream'))]))).SerializeToString())
w('status-not-cancelable', pick('CancelTask', 3) + bytes([12]) + b'TaskNotCancelableError: no')
w('status-plain', pick('GetTask', 3) + bytes([5]))
scheme = pb.SecurityScheme(http_auth_security_scheme=pb.HTTPAuthSecurityScheme(scheme='bearer'))
oauth = pb.SecurityScheme(oauth2_security_scheme=pb.OAuth2SecurityScheme(flows=pb.OAuthFlows(
    client_credentials=pb.ClientCredentialsOAuthFlow(token_url='https://a/t', scopes={'r': 'Read'}))))
card = pb.AgentCard(protocol_version='0.3.0', name='n', description='d', url='grpc.a.example:443',
                    preferred_transport='GRPC', version='1', default_input_modes=['text/plain'],
                    default_output_modes=['text/plain'], capabilities=pb.AgentCapabilities(streaming=True),
                    security_schemes={'bearer': scheme, 'oauth': oauth},
                    security=[pb.Security(schemes={'bearer': pb.StringList(list=[])})],
                    skills=[pb.AgentSkill(id='s', name='S', description='d', tags=['t'])])
w('card', pick('GetExtendedAgentCard', 4) + card.SerializeToString())
for op, route, body in [('SendMessage', '/v1/message:send', '{"message":{"messageId":"m","role":"ROLE_USER","content":[{"text":"hi"}]}}'),
                        ('GetTask', '/v1/tasks/t?historyLength=2', ''),
                        ('CancelTask', '/v1/tasks/t:cancel', '{"name":"tasks/t"}'),
                        ('DeleteTaskPushNotificationConfig', '/v1/tasks/t/pushNotificationConfigs/c%2F1', '')]:
    w('request-' + op, pick(op, 0) + (route + '\n' + body).encode())
