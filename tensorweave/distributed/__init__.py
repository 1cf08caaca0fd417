"""Distributed runtime: ClusterSpec, Server, master and worker services."""
from tensorweave.distributed.cluster import ClusterSpec as ClusterSpec
from tensorweave.distributed.server import Server as Server
# Mutual TLS / shared-token credentials for Server(..., credentials=...) (issue 12).
from tensorweave.distributed.transport.credentials import Credentials as Credentials
