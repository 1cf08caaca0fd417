"""`tf.nn`: activations, softmax, cross-entropies, convolution, pooling and dropout.

Example:
    >>> import tensorweave as tf
    >>> h = tf.nn.relu(tf.nn.conv2d(x, w, strides=[1, 1, 1, 1], padding="SAME"))
    >>> h = tf.nn.max_pool(h, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
    >>> loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
"""
# ruff: noqa: F401  (this module only re-exports)
from tensorweave.ops.nn.conv_ops import (
    conv2d as conv2d, conv2d_backprop_filter as conv2d_backprop_filter,
    conv2d_backprop_input as conv2d_backprop_input, conv2d_transpose as conv2d_transpose)
from tensorweave.ops.nn.layer_ops import (
    bias_add as bias_add, dropout as dropout,
    l2_loss as l2_loss, l2_normalize as l2_normalize, moments as moments)
from tensorweave.ops.nn.embedding_ops import embedding_lookup as embedding_lookup
from tensorweave.nn_impl.embedding_sparse import (
    embedding_lookup_sparse as embedding_lookup_sparse,
    safe_embedding_lookup_sparse as safe_embedding_lookup_sparse)
from tensorweave.ops.nn.nn_ops import (
    elu as elu, leaky_relu as leaky_relu, log_softmax as log_softmax, relu as relu,
    relu6 as relu6, softmax as softmax, softplus as softplus)
from tensorweave.ops.nn.pool_ops import avg_pool as avg_pool, max_pool as max_pool
from tensorweave.ops.math.special_ops import softsign as softsign
from tensorweave.ops.nn.nn_extra_ops import (
    batch_normalization as batch_normalization, crelu as crelu,
    log_poisson_loss as log_poisson_loss, selu as selu, swish as swish,
    weighted_cross_entropy_with_logits as weighted_cross_entropy_with_logits,
    xw_plus_b as xw_plus_b)
from tensorweave.math_impl.stats_ops import zero_fraction as zero_fraction
from tensorweave.ops.nn.topk_ops import in_top_k as in_top_k, top_k as top_k
from tensorweave.ops.nn.xent_ops import (
    sigmoid_cross_entropy_with_logits as sigmoid_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits as softmax_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits_v2 as softmax_cross_entropy_with_logits_v2,
    sparse_softmax_cross_entropy_with_logits as sparse_softmax_cross_entropy_with_logits)

# TF1 also exposes these math ops under tf.nn.
from tensorweave.ops.math.math_ops import sigmoid as sigmoid, tanh as tanh  # noqa: E402
from tensorweave.ops.nn.candidate_sampling_ops import (
    all_candidate_sampler as all_candidate_sampler,
    compute_accidental_hits as compute_accidental_hits,
    fixed_unigram_candidate_sampler as fixed_unigram_candidate_sampler,
    learned_unigram_candidate_sampler as learned_unigram_candidate_sampler,
    log_uniform_candidate_sampler as log_uniform_candidate_sampler,
    uniform_candidate_sampler as uniform_candidate_sampler)
from tensorweave.nn_impl.sampled_losses import (
    nce_loss as nce_loss, sampled_softmax_loss as sampled_softmax_loss)
from tensorweave.rnn import rnn_cell as rnn_cell
from tensorweave.rnn.rnn_ops import (
    bidirectional_dynamic_rnn as bidirectional_dynamic_rnn, dynamic_rnn as dynamic_rnn)
from tensorweave.rnn.raw_rnn import raw_rnn as raw_rnn
from tensorweave.rnn.static_rnn import (
    static_bidirectional_rnn as static_bidirectional_rnn, static_rnn as static_rnn)
from tensorweave.ops.nn.conv3d_ops import (
    conv3d as conv3d, conv3d_backprop_input_v2 as conv3d_backprop_input_v2,
    conv3d_transpose as conv3d_transpose)
from tensorweave.nn_impl.conv_wrappers import (
    atrous_conv2d as atrous_conv2d, conv1d as conv1d, convolution as convolution, pool as pool)
from tensorweave.nn_impl.depthwise_conv import (
    depthwise_conv2d as depthwise_conv2d, separable_conv2d as separable_conv2d)
from tensorweave.ops.nn.depthwise_ops import (
    depthwise_conv2d_native as depthwise_conv2d_native,
    depthwise_conv2d_native_backprop_filter as depthwise_conv2d_native_backprop_filter,
    depthwise_conv2d_native_backprop_input as depthwise_conv2d_native_backprop_input)
from tensorweave.ops.nn.norm_ops import (
    fused_batch_norm as fused_batch_norm,
    local_response_normalization as local_response_normalization, lrn as lrn)
from tensorweave.ops.nn.pool3d_ops import avg_pool3d as avg_pool3d, max_pool3d as max_pool3d
from tensorweave.ops.nn.pool_argmax_ops import max_pool_with_argmax as max_pool_with_argmax
from tensorweave.ops.array.space_batch_ops import space_to_batch as space_to_batch
from tensorweave.ops.array.depth_space_ops import (
    depth_to_space as depth_to_space, space_to_depth as space_to_depth)
from tensorweave.nn_impl.space_to_batch_conv import with_space_to_batch as with_space_to_batch
