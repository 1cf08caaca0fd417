"""`tf.feature_column` (TF 1.x feature_column v1): columns, input_layer, linear_model.

Columns describe how raw parsed features (dense Tensors and SparseTensors, as from
`tf.parse_example`) become model input. Hash and cross ids equal TF's (farmhash
Fingerprint64), and variables are named as TF names them
(`input_layer/<col>_embedding/embedding_weights`, `linear_model/<col>/weights`).

Example:
    >>> city = tf.feature_column.categorical_column_with_hash_bucket("city", 1000)
    >>> net = tf.feature_column.input_layer(
    ...     features, [tf.feature_column.embedding_column(city, 8)])
"""
from tensorweave.feature_column.categorical import (
    categorical_column_with_embedding as categorical_column_with_embedding,
    categorical_column_with_hash_bucket as categorical_column_with_hash_bucket,
    categorical_column_with_identity as categorical_column_with_identity,
    categorical_column_with_vocabulary_list as categorical_column_with_vocabulary_list,
    crossed_column as crossed_column)
from tensorweave.feature_column.dense import (
    bucketized_column as bucketized_column, embedding_column as embedding_column,
    indicator_column as indicator_column, numeric_column as numeric_column)
from tensorweave.feature_column.layers import (
    input_layer as input_layer, linear_model as linear_model,
    make_parse_example_spec as make_parse_example_spec)
from tensorweave.feature_column.more_columns import (
    shared_embedding_columns as shared_embedding_columns,
    weighted_categorical_column as weighted_categorical_column)
from tensorweave.feature_column.vocabulary_file import (
    categorical_column_with_vocabulary_file as categorical_column_with_vocabulary_file)
