"""Re-exports `tensorweave.distributed.topology` (tasks, TF_CONFIG, seed flags, free
ports), which launch, testing and bench share; it lives below launch/ so the
server can use it too."""
from tensorweave.distributed.topology import (  # noqa: F401 - re-exports
    PS_STANDBY as PS_STANDBY, TRAINING_JOBS as TRAINING_JOBS, Task as Task,
    Topology as Topology, free_ports as free_ports)
