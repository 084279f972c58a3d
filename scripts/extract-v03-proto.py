#!/usr/bin/env python3
"""Writes proto/a2a-v0.3.0.fds: the A2A 0.3 protobuf schema (`a2a.v1`, the gRPC service and its
messages) as a FileDescriptorSet, taken from the official a2a-sdk 0.3.26 (its generated
`a2a/grpc/a2a_pb2.py` holds the compiled `a2a.proto`) with every file it imports (google.api
annotations, google.protobuf well-known types). build.rs generates the Rust types from it with
prost-build and pbjson-build; no protoc runs. Run with the 0.3 venv: `.venv03/bin/python
scripts/extract-v03-proto.py` (a2a-sdk 0.3.26, pinned in tests/peers/v03/requirements.txt)."""
import sys

from google.protobuf import descriptor_pb2
from a2a.grpc import a2a_pb2

out = descriptor_pb2.FileDescriptorSet()
seen = set()


def add(fd):
    if fd.name in seen:
        return
    for dep in fd.dependencies:
        add(dep)
    seen.add(fd.name)
    proto = descriptor_pb2.FileDescriptorProto()
    fd.CopyToProto(proto)
    out.file.append(proto)


add(a2a_pb2.DESCRIPTOR)
path = sys.argv[1] if len(sys.argv) > 1 else "proto/a2a-v0.3.0.fds"
with open(path, "wb") as f:
    f.write(out.SerializeToString())
print(f"{path}: {len(out.file)} files: {', '.join(p.name for p in out.file)}")
