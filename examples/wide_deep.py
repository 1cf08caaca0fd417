"""A wide & deep click-through trainer on parameter servers (between-graph, TF1 style).

Each worker writes a synthetic click log with a planted signal to TFRecord files of
`tf.train.Example`s (its own shard; the chief also writes the held-out set), then
trains on it: `tf.data.TFRecordDataset` -> repeat/shuffle -> batch -> `map(parse_example)`
-> prefetch,
feature columns (hashed user and item ids, a category vocabulary list, bucketized
hour, crossed columns, embedding columns) into

  * a wide part: `tf.feature_column.linear_model`, trained with `FtrlOptimizer`;
  * a deep part: `tf.feature_column.input_layer` + `tf.layers.dense`, `AdagradOptimizer`.

The wide weights and the embeddings are split across every ps task
(`fixed_size_partitioner(num_ps)` under `replica_device_setter`). Async by default,
`--sync=true` aggregates both parts' gradients with one `SyncReplicasOptimizer`.
`MonitoredTrainingSession` writes checkpoints to --checkpoint_dir; each worker prints
its mean loss every --log_every steps (it falls) and the chief ends with the AUC and
accuracy of the final model on the held-out clicks ("eval auc 0.86 ...").

The planted signal: each user likes one of the five categories (user id mod 5) and a
click is likely when an item of that category is shown, or a sports item in the
evening. The user x category cross (wide) and the user and item embeddings (deep)
can learn it; the Bayes-optimal AUC is about 0.88.

Run on this machine with 2 ps + 2 workers:

    tensorweave launch --ps 2 --workers 2 --pass-flags -- \\
        python examples/wide_deep.py --train_steps=1000 --sync=false

or one process per task:

    python examples/wide_deep.py --ps_hosts=localhost:2222,localhost:2223 \\
        --worker_hosts=localhost:2224,localhost:2225 --job_name=ps --task_index=0
    ... --job_name=ps --task_index=1, --job_name=worker --task_index=0 and 1

Without the seed flags it reads the cluster from TF_CONFIG. Every process exits by
itself when training ends, the ps tasks too. The same file runs on real TF 2.x
(compat.v1) for comparison: `TF_USE_LEGACY_KERAS=1 python -m bench.tf_compat
examples/wide_deep.py ...` (what `python -m bench.wide_deep` does).
"""
import argparse
import math
import os
import sys
import time

import numpy as np

import tensorweave as tf

FLAGS = None
fc = tf.feature_column
CATEGORIES = ["news", "sports", "music", "games", "video"]
USERS, ITEMS = 200, 2000


# ---- the click log ------------------------------------------------------------------

def click_log(n, seed):
    """`n` impressions (dicts of raw feature values) with their click labels."""
    rng = np.random.RandomState(seed)
    users, items = rng.randint(0, USERS, n), rng.randint(0, ITEMS, n)
    category, hour = items % len(CATEGORIES), rng.uniform(0, 24, n)
    logit = np.where(category == users % len(CATEGORIES), 3.0, -2.5)
    logit += np.where((category == 1) & (hour >= 18), 3.0, 0.0)  # sports in the evening
    clicked = rng.uniform(size=n) < 1 / (1 + np.exp(-logit))
    price = rng.lognormal(2.0, 0.5, n)  # noise: no signal in the price
    return [{"user": "u%d" % u, "item": int(i), "category": CATEGORIES[c], "hour": float(h),
             "price": float(p), "clicked": int(y)}
            for u, i, c, h, p, y in zip(users, items, category, hour, price, clicked)]


def to_example(row):
    def feature(v):
        if isinstance(v, str):
            return tf.train.Feature(bytes_list=tf.train.BytesList(value=[v.encode()]))
        if isinstance(v, float):
            return tf.train.Feature(float_list=tf.train.FloatList(value=[v]))
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[v]))
    return tf.train.Example(features=tf.train.Features(
        feature={k: feature(v) for k, v in row.items()}))


def write_records(path, rows):
    """Writes atomically: other tasks may read the directory while this one writes."""
    tmp = "%s.tmp-%d" % (path, os.getpid())
    with tf.io.TFRecordWriter(tmp) as writer:
        for row in rows:
            writer.write(to_example(row).SerializeToString())
    os.replace(tmp, path)


# ---- the model ----------------------------------------------------------------------

def ev_option(ev_filter=None, ev_elimination=None, filter_freq=3, steps_to_live=4000):
    """DeepRec's EmbeddingVariableOption from the modelzoo's --ev_filter/--ev_elimination:
    admit an id after `filter_freq` lookups (counter or counting Bloom filter); at each
    save drop ids not looked up for `steps_to_live` global steps (gstep) or whose row's
    L2 norm fell under 1.0 (l2)."""
    evict = {"gstep": lambda: tf.GlobalStepEvict(steps_to_live=steps_to_live),
             "l2": lambda: tf.L2WeightEvict(l2_weight_threshold=1.0),
             None: lambda: None}[ev_elimination]()
    admit = {"counter": lambda: tf.CounterFilter(filter_freq=filter_freq),
             "cbf": lambda: tf.CBFFilter(filter_freq=filter_freq, max_element_size=2**30,
                                         false_positive_probability=0.01,
                                         counter_type=tf.int64),
             None: lambda: None}[ev_filter]()
    return tf.EmbeddingVariableOption(filter_option=admit, evict_option=evict)


def columns(ev=False, num_ps=1, option=None):
    """The wide and the deep part's feature columns. With `ev` (DeepRec's --ev switch)
    the deep part embeds users and items with EmbeddingVariables: a table that grows
    with the ids seen, no hash buckets to size or collide in."""
    user = fc.categorical_column_with_hash_bucket("user", 1000)
    item = fc.categorical_column_with_hash_bucket("item", 4000, dtype=tf.int64)
    if ev:
        option = option or tf.EmbeddingVariableOption()
        deep_user = fc.categorical_column_with_embedding("user", partition_num=num_ps,
                                                         ev_option=option)
        deep_item = fc.categorical_column_with_embedding("item", dtype=tf.int64,
                                                         partition_num=num_ps,
                                                         ev_option=option)
    else:
        deep_user, deep_item = user, item
    category = fc.categorical_column_with_vocabulary_list("category", CATEGORIES)
    hour = fc.numeric_column("hour")
    hour_buckets = fc.bucketized_column(hour, [6.0, 12.0, 18.0])
    wide = [user, category, hour_buckets,
            fc.crossed_column(["user", "category"], 5000),
            fc.crossed_column([hour_buckets, "category"], 100)]
    deep = [fc.embedding_column(deep_user, 8), fc.embedding_column(deep_item, 8),
            fc.indicator_column(category),
            fc.numeric_column("hour", normalizer_fn=lambda x: x / 24.0),
            fc.numeric_column("price", normalizer_fn=lambda x: tf.log1p(x) - 2.0)]
    return wide, deep


def input_fn(path, wide, deep, batch_size, seed=None):
    """Batches of parsed examples from a TFRecord file: shuffled, endlessly with a seed;
    in file order, once, without."""
    spec = fc.make_parse_example_spec(wide + deep)
    spec["clicked"] = tf.FixedLenFeature([1], tf.int64)
    dataset = tf.data.TFRecordDataset([path])
    if seed is not None:
        dataset = dataset.repeat().shuffle(4 * batch_size, seed=seed)
    dataset = dataset.batch(batch_size).map(lambda records: tf.parse_example(records, spec))
    dataset = dataset.prefetch(1)  # reading and parsing overlap the step
    features = dataset.make_one_shot_iterator().get_next()
    labels = tf.cast(features.pop("clicked"), tf.float32)
    return features, labels


def wide_and_deep(features, wide, deep, num_ps, hidden):
    """The logits; the wide weights and the embeddings split across the ps tasks."""
    partitioner = tf.fixed_size_partitioner(num_ps)
    with tf.variable_scope("wide", partitioner=partitioner):
        wide_logits = fc.linear_model(features, wide)
    with tf.variable_scope("deep"):
        with tf.variable_scope("inputs", partitioner=partitioner):
            net = fc.input_layer(features, deep)
        for i, units in enumerate(hidden):
            net = tf.layers.dense(net, units, activation=tf.nn.relu, name="hidden%d" % i)
        deep_logits = tf.layers.dense(net, 1, name="logits")
    return wide_logits + deep_logits


class WideDeepOptimizer(tf.train.Optimizer):
    """FTRL for the wide variables, Adagrad for the rest, as one optimizer: one
    SyncReplicasOptimizer can then aggregate the gradients of both parts (two of
    them would share one token queue, which TF names "sync_token_q")."""

    def __init__(self, wide_opt, deep_opt, wide_vars):
        super(WideDeepOptimizer, self).__init__(False, "WideDeep")
        self._wide_opt, self._deep_opt = wide_opt, deep_opt
        self._wide_names = {v.op.name for v in wide_vars}

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        grads_and_vars = [(g, v) for g, v in grads_and_vars if g is not None]
        wide = [(g, v) for g, v in grads_and_vars if v.op.name in self._wide_names]
        deep = [(g, v) for g, v in grads_and_vars if v.op.name not in self._wide_names]
        updates = [self._wide_opt.apply_gradients(wide),
                   self._deep_opt.apply_gradients(deep)]
        if global_step is None:
            return tf.group(*updates, name=name)
        with tf.control_dependencies(updates):
            return tf.assign_add(global_step, 1, name=name).op


# ---- evaluation ---------------------------------------------------------------------

def parsed_eval_set(path, wide, deep):
    """The held-out examples parsed once, locally: values to feed the model's inputs."""
    with tf.Graph().as_default():
        features, labels = input_fn(path, wide, deep, FLAGS.eval_examples)
        with tf.Session() as sess:
            return sess.run((features, labels))


def auc(labels, scores):
    """Area under the ROC curve: P(score of a click > score of a non-click)."""
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    pos = labels > 0.5
    n_pos, n_neg = pos.sum(), (~pos).sum()
    return (ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / max(n_pos * n_neg, 1)


# ---- the job ------------------------------------------------------------------------

def cluster_and_task():
    if FLAGS.job_name:
        cluster = tf.train.ClusterSpec({"ps": FLAGS.ps_hosts.split(","),
                                        "worker": FLAGS.worker_hosts.split(",")})
        return cluster, FLAGS.job_name, FLAGS.task_index
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if not resolver.task_type:
        sys.exit("wide_deep.py: no cluster given: pass --ps_hosts, --worker_hosts, "
                 "--job_name and --task_index, or set TF_CONFIG (with a \"task\").")
    return resolver.cluster_spec(), resolver.task_type, resolver.task_id


def write_data(task_index, is_chief):
    """This worker's training shard (and, by the chief, the held-out set)."""
    if not os.path.isdir(FLAGS.data_dir):
        os.makedirs(FLAGS.data_dir, exist_ok=True)
    train = os.path.join(FLAGS.data_dir, "clicks-train-%05d.tfrecord" % task_index)
    evals = os.path.join(FLAGS.data_dir, "clicks-eval.tfrecord")
    write_records(train, click_log(FLAGS.examples_per_worker, seed=task_index + 1))
    if is_chief:
        write_records(evals, click_log(FLAGS.eval_examples, seed=0))
    return train, evals


def main(_):
    cluster, job_name, task_index = cluster_and_task()
    jobs = cluster.as_dict()
    num_ps, num_replicas = len(jobs["ps"]), len(jobs.get("worker", [])) + len(
        jobs.get("chief", []))
    server = tf.train.Server(cluster, job_name=job_name, task_index=task_index)
    if job_name == "ps":
        server.join()
        return
    is_chief = job_name == "chief" or ("chief" not in jobs and task_index == 0)
    shard = task_index + (1000 if job_name == "chief" else 0)
    train_path, eval_path = write_data(shard, is_chief)
    wide, deep = columns(FLAGS.ev, num_ps, ev_option(
        FLAGS.ev_filter, FLAGS.ev_elimination, FLAGS.ev_filter_freq, FLAGS.ev_steps_to_live))
    eval_features, eval_labels = parsed_eval_set(eval_path, wide, deep) if is_chief \
        else (None, None)

    with tf.device(tf.train.replica_device_setter(
            worker_device="/job:%s/task:%d" % (job_name, task_index), cluster=cluster)):
        features, labels = input_fn(train_path, wide, deep, FLAGS.batch_size, seed=shard)
        logits = wide_and_deep(features, wide, deep, num_ps, [64, 32])
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
            labels=labels, logits=logits))
        probabilities = tf.sigmoid(logits)
        tf.summary.scalar("loss", loss)
        global_step = tf.train.get_or_create_global_step()
        opt = WideDeepOptimizer(
            tf.train.FtrlOptimizer(FLAGS.wide_learning_rate, l1_regularization_strength=1e-3),
            tf.train.AdagradOptimizer(FLAGS.deep_learning_rate),
            tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="wide"))
        hooks = [tf.train.StopAtStepHook(last_step=FLAGS.train_steps)]
        if FLAGS.sync:
            opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=num_replicas,
                                                 total_num_replicas=num_replicas)
            hooks.append(opt.make_session_run_hook(is_chief))
        train_op = opt.minimize(loss, global_step=global_step)

    chief_hooks = []
    if is_chief:  # the final model on the held-out clicks, before the ps tasks end
        feed = {features[k]: v for k, v in eval_features.items()}
        feed[labels] = eval_labels
        eval_hook = tf.train.FinalOpsHook([probabilities, labels, loss], feed)
        chief_hooks.append(eval_hook)
    config = tf.ConfigProto(
        device_filters=["/job:ps", "/job:%s/task:%d" % (job_name, task_index)])
    start, steps, losses, first_step_at, first_cpu = time.time(), 0, [], None, None
    with tf.train.MonitoredTrainingSession(
            master=server.target, is_chief=is_chief, config=config,
            checkpoint_dir=FLAGS.checkpoint_dir, hooks=hooks, chief_only_hooks=chief_hooks,
            save_checkpoint_steps=FLAGS.save_checkpoint_steps,
            save_incremental_checkpoint_secs=FLAGS.save_incremental_checkpoint_secs,
            save_summaries_steps=FLAGS.log_every) as sess:
        while not sess.should_stop():
            _, step, loss_v = sess.run([train_op, global_step, loss])
            if first_step_at is None:
                first_step_at, first_cpu = time.time(), time.process_time()
            steps += 1
            losses.append(loss_v)
            if steps % FLAGS.log_every == 0:
                print("%s %d: local step %d, global step %d, mean loss %.4f" % (
                    job_name, task_index, steps, step, np.mean(losses)), flush=True)
                losses = []
    end, end_cpu = time.time(), time.process_time()
    # From session creation (waits for the chief and the ps tasks included), and
    # from the end of the first step (the steady state); this process's CPU time a
    # step (all its threads: input pipeline, transport), steadier than wall time on
    # a shared machine.
    print("%s %d: done, %d local steps, %.1f examples/s, %.1f examples/s after the "
          "first step (%.2fs), %.2f ms CPU a step after the first" % (
              job_name, task_index, steps, steps * FLAGS.batch_size / max(end - start, 1e-9),
              (steps - 1) * FLAGS.batch_size / max(end - (first_step_at or end), 1e-9),
              (first_step_at or end) - start,
              1000 * (end_cpu - (first_cpu or end_cpu)) / max(steps - 1, 1)), flush=True)
    if is_chief and eval_hook.final_ops_values is not None:
        probs, truth, eval_loss = eval_hook.final_ops_values
        probs, truth = probs.ravel(), truth.ravel()
        accuracy = np.mean((probs > 0.5) == (truth > 0.5))
        print("%s %d: eval auc %.4f, accuracy %.4f, loss %.4f on %d held-out clicks "
              "(log 2 = %.4f)" % (job_name, task_index, auc(truth, probs), accuracy,
                                  eval_loss, len(truth), math.log(2)), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.register("type", "bool", lambda v: v.lower() == "true")
    parser.add_argument("--ps_hosts", type=str, default="")
    parser.add_argument("--worker_hosts", type=str, default="")
    parser.add_argument("--job_name", type=str, default="",
                        help="One of 'ps', 'worker' (none: read TF_CONFIG)")
    parser.add_argument("--task_index", type=int, default=0)
    parser.add_argument("--sync", type="bool", default=False,
                        help="aggregate the workers' gradients (SyncReplicasOptimizer)")
    parser.add_argument("--train_steps", type=int, default=1000, help="global steps")
    parser.add_argument("--batch_size", type=int, default=256)
    parser.add_argument("--data_dir", type=str, default="/tmp/wide_deep_data")
    parser.add_argument("--checkpoint_dir", type=str, default="/tmp/wide_deep_model")
    parser.add_argument("--save_checkpoint_steps", type=int, default=500)
    parser.add_argument("--ev", type="bool", default=False,
                        help="embed users and items with EmbeddingVariables (DeepRec's "
                             "tf.feature_column.categorical_column_with_embedding)")
    parser.add_argument("--ev_filter", choices=["counter", "cbf"], default=None,
                        help="admit an id to an EmbeddingVariable after --ev_filter_freq "
                             "lookups (DeepRec's CounterFilter / CBFFilter)")
    parser.add_argument("--ev_filter_freq", type=int, default=3)
    parser.add_argument("--ev_elimination", choices=["gstep", "l2"], default=None,
                        help="at each save, evict ids unseen for --ev_steps_to_live global "
                             "steps (gstep) or with a row norm under 1.0 (l2)")
    parser.add_argument("--ev_steps_to_live", type=int, default=4000)
    parser.add_argument("--save_incremental_checkpoint_secs", type=float, default=None,
                        help="between full checkpoints, save what changed every N seconds "
                             "(DeepRec's incremental checkpoints)")
    parser.add_argument("--examples_per_worker", type=int, default=20000)
    parser.add_argument("--eval_examples", type=int, default=4000)
    parser.add_argument("--wide_learning_rate", type=float, default=1.0)
    parser.add_argument("--deep_learning_rate", type=float, default=0.2)
    parser.add_argument("--log_every", type=int, default=100)
    FLAGS, unparsed = parser.parse_known_args()
    tf.app.run(main=main, argv=[sys.argv[0]] + unparsed)
