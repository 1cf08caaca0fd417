"""Transport: how requests and tensors cross between tasks.

`base` defines the interface (the `Peer` base class, `Transport`); `registry` holds
the transports by name (what `Server(protocol=...)` chooses: "grpc" the default,
"tcp", "unix", "inprocess"); `tensorweave.distributed.peers` connects and serves by
it. One sub-package per transport: `inprocess` (servers of this process, called
directly), `unix` (same-host tasks: one Unix-domain socket per task pair, frames,
shared-memory rings), `tcp` (any machine: gRPC on the task's port, big tensors
pulled raw over TCP). Only `tcp` imports grpc, and only when a server starts or a
peer on another machine is used. Shared by all: `codec` (header + zero-copy
chunks), `buffers`, `credentials`, `sidechannel` (TLS acceptance, refusal logs),
`limits`. Services never import this package; transport wraps them.
"""
