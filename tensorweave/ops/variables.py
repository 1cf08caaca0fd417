"""TF's `variables` and `resource_variable_ops` module names over `ops/state`.

Code written against TF's internals (`from tensorflow.python.ops import
resource_variable_ops`) finds the variable classes and helpers here under TF's
names; each is the one object defined in `tensorweave.ops.state`.

Example:
    >>> from tensorweave.ops import variables
    >>> v = variables.ResourceVariable([1.0, 2.0])
"""
from tensorweave.ops.state.partitioned_variables import PartitionedVariable
from tensorweave.ops.state.resource_variables import (
    RefVariable, ResourceVariable, disable_resource_variables, enable_resource_variables,
    is_resource_variable, resource_variables_enabled)
from tensorweave.ops.state.variable_policies import (
    VariableAggregation, VariableAggregationV2, VariableSynchronization)
from tensorweave.ops.state.variables import (
    Variable, VariableV1, all_variables, global_variables, local_variables,
    model_variables, moving_average_variables, trainable_variables)

__all__ = ["PartitionedVariable", "RefVariable", "ResourceVariable", "Variable", "VariableV1",
           "VariableAggregation", "VariableAggregationV2", "VariableSynchronization",
           "all_variables", "disable_resource_variables", "enable_resource_variables",
           "global_variables", "is_resource_variable", "local_variables", "model_variables",
           "moving_average_variables", "resource_variables_enabled", "trainable_variables"]
