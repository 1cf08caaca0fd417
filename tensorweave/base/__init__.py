"""The bottom layer: one home for each cross-cutting concept every other layer uses.

Nothing here imports any other part of tensorweave. What lives here: the registry of
`TENSORWEAVE_*` settings, the one bounded-wait (back-off) policy, the one host:port
parser and same-host test, and the one atomic file write.
"""
