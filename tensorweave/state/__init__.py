"""The state layer: `tf.Variable` and everything built on the variable ops.

Above `ops` (whose `ops/state/` holds the VariableV2/Assign/Scatter* stanzas), below
the libraries and facades that make variables:

- `variables`, `resource_variables`, `variable_meta`, `variable_methods`,
  `variable_def`, `variable_policies`, `initial_value_guard`: `tf.Variable`
  (VariableV1 / ResourceVariable), its methods, proto form and sync/aggregation modes;
- `variable_scope` (+ `variable_scope_core`, `variable_store`, `custom_getters`,
  `template`): `tf.variable_scope`, `tf.get_variable`, `tf.make_template`;
- `init_ops`, `variable_initializers`: the initializers, `global_variables_initializer`;
- `partitioned_variables`, `partitioners`: sharded variables and their partitioners;
- `variable_collections`: the GraphKeys collections of variables.

The package itself offers the names of TF's `variables` and `resource_variable_ops`
modules (code written against TF's internals finds them here).

Example:
    >>> from tensorweave import state
    >>> v = state.ResourceVariable([1.0, 2.0])
"""
from tensorweave.state.partitioned_variables import PartitionedVariable
from tensorweave.state.resource_variables import (
    RefVariable, ResourceVariable, disable_resource_variables, enable_resource_variables,
    is_resource_variable, resource_variables_enabled)
from tensorweave.state.variable_policies import (
    VariableAggregation, VariableAggregationV2, VariableSynchronization)
from tensorweave.state.variables import (
    Variable, VariableV1, all_variables, global_variables, local_variables,
    model_variables, moving_average_variables, trainable_variables)

__all__ = ["PartitionedVariable", "RefVariable", "ResourceVariable", "Variable", "VariableV1",
           "VariableAggregation", "VariableAggregationV2", "VariableSynchronization",
           "all_variables", "disable_resource_variables", "enable_resource_variables",
           "global_variables", "is_resource_variable", "local_variables", "model_variables",
           "moving_average_variables", "resource_variables_enabled", "trainable_variables"]
