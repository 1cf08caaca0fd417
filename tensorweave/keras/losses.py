"""`tf.keras.losses`: per-example loss functions `fn(y_true, y_pred)` (loss_functions.py)
and the loss classes that weight and reduce them (loss_classes.py).

Probabilities are clipped to [1e-7, 1 - 1e-7] before logarithms, as Keras does;
`from_logits=True` uses the stable cross-entropy ops instead.

Example:
    >>> model.compile("adam", loss="sparse_categorical_crossentropy")
    >>> per_example = tf.keras.losses.mean_squared_error(y, p)      # mean over the last axis
    >>> loss = tf.keras.losses.BinaryCrossentropy()(labels, probabilities)   # a scalar
"""
from tensorweave.keras.loss_classes import (  # noqa: F401 - the public namespace
    BinaryCrossentropy, CategoricalCrossentropy, CategoricalHinge, CosineSimilarity, Hinge,
    Huber, KLDivergence, LogCosh, Loss, MeanAbsoluteError, MeanAbsolutePercentageError,
    MeanSquaredError, MeanSquaredLogarithmicError, Poisson, Reduction,
    SparseCategoricalCrossentropy, SquaredHinge)
from tensorweave.keras.loss_functions import (  # noqa: F401 - the public namespace
    EPSILON, KLD, MAE, MAPE, MSE, MSLE, binary_crossentropy, categorical_crossentropy,
    categorical_hinge, cosine_similarity, get, hinge, huber_loss, kld,
    kullback_leibler_divergence, logcosh, mae, mape, mean_absolute_error,
    mean_absolute_percentage_error, mean_squared_error, mean_squared_logarithmic_error, mse,
    msle, poisson, sparse_categorical_crossentropy, squared_hinge)
