"""The method tables of the master and worker services (no transport here).

Every transport serves and calls the same methods: a method is a name, a
request type and a response type; the plain service object implements it as
`service.<snake_name>(request, tensors) -> (response, tensors)`.
"""
from __future__ import annotations

from tensorweave.distributed.protocol import service_pb2 as pb

MASTER_SERVICE = "tensorweave.Master"
WORKER_SERVICE = "tensorweave.Worker"


class Method:
    """One service method: its name and request and response message types."""

    __slots__ = ("name", "request", "response", "py_name")

    def __init__(self, name: str, request: type, response: type) -> None:
        self.name, self.request, self.response = name, request, response
        out: list[str] = []
        for ch in name:
            out.append("_" + ch.lower() if ch.isupper() and out else ch.lower())
        self.py_name = "".join(out)


MASTER_METHODS = [
    Method("CreateSession", pb.CreateSessionRequest, pb.CreateSessionResponse),
    Method("ExtendSession", pb.ExtendSessionRequest, pb.ExtendSessionResponse),
    Method("RunStep", pb.RunStepRequest, pb.RunStepResponse),
    Method("CloseSession", pb.CloseSessionRequest, pb.CloseSessionResponse),
    Method("ListDevices", pb.ListDevicesRequest, pb.ListDevicesResponse),
    Method("Reset", pb.ResetRequest, pb.ResetResponse),
    Method("JobDone", pb.JobDoneRequest, pb.JobDoneResponse),
]
WORKER_METHODS = [
    Method("GetStatus", pb.GetStatusRequest, pb.GetStatusResponse),
    Method("RegisterGraph", pb.RegisterGraphRequest, pb.RegisterGraphResponse),
    Method("DeregisterGraph", pb.DeregisterGraphRequest, pb.DeregisterGraphResponse),
    Method("RunGraph", pb.RunGraphRequest, pb.RunGraphResponse),
    Method("PushTensors", pb.PushTensorsRequest, pb.PushTensorsResponse),
    Method("AbortStep", pb.AbortStepRequest, pb.AbortStepResponse),
    Method("CloseSession", pb.CloseWorkerSessionRequest, pb.CloseWorkerSessionResponse),
    Method("Reset", pb.ResetRequest, pb.ResetResponse),
    Method("JobDone", pb.JobDoneRequest, pb.JobDoneResponse),
    Method("ReplicaPut", pb.ReplicaPutRequest, pb.ReplicaPutResponse),
    Method("ReplicaGet", pb.ReplicaGetRequest, pb.ReplicaGetResponse),
]
SERVICES = {MASTER_SERVICE: MASTER_METHODS, WORKER_SERVICE: WORKER_METHODS}
