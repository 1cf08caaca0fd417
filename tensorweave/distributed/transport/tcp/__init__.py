"""Tasks on any machine: the master and worker services over gRPC on the task's TCP port.

Modules: peer.py (`TCP`, `GrpcPeer`, `GrpcListener`), rpc.py (framed unary calls),
stream.py (chunked tensor streams, the fallback for big tensors), bulk.py and
bulk_auth.py (big tensors pulled raw over TCP, and who may pull), shared_port.py
(one port for gRPC and bulk: each connection sorted by its first bytes),
grpc_auth.py (TLS and the token on gRPC). Only this package imports grpc, and
only when a server starts or a peer on another machine is used: this file
imports nothing, so `registry` loads `tcp.peer` on first use.
"""
